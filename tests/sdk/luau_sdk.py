"""Loads sdk/luau into the real Luau VM and bridges bytes and tables for the tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.luau_vm import pluau

SDK_SOURCE = Path(__file__).resolve().parents[2] / "sdk" / "luau" / "src" / "init.luau"

# (url, json body) -> (transport ok, HTTP status, response text); a real-HTTP function fits too.
Http = Callable[[str, str], tuple[bool, int, str]]


class LuauSdk:
    """One Luau VM holding the SDK module; keep it alive while its functions are used."""

    def __init__(self, source: str | None = None,
                 before: Callable[[Any], None] | None = None) -> None:
        self.lua = pluau().Lua()
        if before is not None:
            before(self.lua)  # globals a test gives the VM (a stand-in `game`), set while writable
        # Roblox runs every script sandboxed (read-only globals, "safe" environments), which is
        # what lets Luau take its fast paths for builtins such as bit32 and buffer.
        self.lua.sandbox(True)
        text = SDK_SOURCE.read_text(encoding="utf-8") if source is None else source
        chunk = self.lua.load_chunk(text, "licore")
        self.module = chunk()[0]

    def bytes_in(self, data: bytes) -> Any:
        return self.lua.create_string(data)

    def call(self, name: str, *args: Any) -> list[Any]:
        fn = self.module.get(name)
        converted = [self.bytes_in(a) if isinstance(a, bytes) else a for a in args]
        return list(fn(*converted))

    def to_python(self, value: Any) -> Any:
        """Luau value -> JSON-shaped Python value, via the SDK's own encoder."""
        if value is None or isinstance(value, bool | int | float | str):
            return value
        text = self.call("jsonEncode", value)[0]
        return json.loads(as_bytes(text).decode("utf-8"))

    def client(
        self,
        http: Http,
        *,
        license_key: str,
        nonces: list[str],
        now: int = 1_700_000_000,
        sleeps: list[float] | None = None,
        **extra: Any,
    ) -> Any:
        """A `Licore.new` client with every outside dependency injected from Python."""
        config = self.lua.create_table()
        config.set("runtimeUrl", "https://licore.test/runtime")
        config.set("productId", "prod-1")
        config.set("licenseKey", license_key)
        config.set("userId", 42)

        # pluau calls Python functions as f(lua, (args...)) and wants a tuple of results.
        def lua_http(_lua: Any, args: tuple[Any, ...]) -> tuple[bool, int, str]:
            url, body = args
            return http(as_bytes(url).decode(), as_bytes(body).decode())

        remaining = list(nonces)
        config.set("http", self.lua.create_function(lua_http))
        config.set("newNonce", self.lua.create_function(lambda *_: (remaining.pop(0),)))
        config.set("now", self.lua.create_function(lambda *_: (now,)))
        slept = sleeps if sleeps is not None else []

        def lua_sleep(_lua: Any, args: tuple[Any, ...]) -> tuple[()]:
            slept.append(args[0])
            return ()

        config.set("sleep", self.lua.create_function(lua_sleep))
        for key, value in extra.items():
            config.set(key, value)
        return self.call("new", config)[0]


def as_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    return bytes(value.as_bytes())


def method(client: Any, name: str, *args: Any) -> list[Any]:
    """Call `client:name(...)` (a Luau method call passes the object first)."""
    return list(client.get(name)(client, *args))
