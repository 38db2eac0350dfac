"""Loads sdk/luau into the real Luau VM and bridges bytes and tables for the tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.support.luau_vm import pluau

SDK_DIR = Path(__file__).resolve().parents[2] / "sdk" / "luau" / "src"
SDK_SOURCE = SDK_DIR / "init.luau"


def sdk_sources(folder: Path = SDK_DIR) -> dict[str, str]:
    """The package's modules by name: `init` (the entry module) and its children."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.luau"))}


def sdk_loader(lua: Any, chunk: str = "licore",
               sources: Mapping[str, str] | None = None) -> Callable[[], Any]:
    """Gives `lua` the `require` the SDK's modules call, as Roblox resolves it for the package
    (the entry module's `require("@self/X")` and a child's `require("./X")` are the child
    module X, run once, its chunk named `<chunk>.X`); returns what runs the entry module.

    Set it while the VM's globals are writable (before `lua.sandbox(True)`)."""
    modules = dict(sdk_sources() if sources is None else sources)
    loaded: dict[str, Any] = {}

    def require(_lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
        path = as_bytes(args[0]).decode("utf-8")
        head, _, name = path.partition("/")
        if head not in ("@self", ".") or name not in modules or name == "init":
            raise RuntimeError(f"the SDK has no module {path!r}")
        if name not in loaded:
            loaded[name] = lua.load_chunk(modules[name], f"{chunk}.{name}")()[0]
        return (loaded[name],)

    lua.globals().set("require", lua.create_function(require))
    return lambda: lua.load_chunk(modules["init"], chunk)()[0]

# (url, json body) -> (transport ok, HTTP status, response text); a real-HTTP function fits too.
Http = Callable[[str, str], tuple[bool, int, str]]


class LuauSdk:
    """One Luau VM holding the SDK module; keep it alive while its functions are used."""

    def __init__(self, sources: Mapping[str, str] | None = None,
                 before: Callable[[Any], None] | None = None) -> None:
        """`sources`: the package's modules by name (`sdk_sources`), the working tree's if None."""
        self.lua = pluau().Lua()
        if before is not None:
            before(self.lua)  # globals a test gives the VM (a stand-in `game`), set while writable
        load = sdk_loader(self.lua, "licore", sources)
        # Roblox runs every script sandboxed (read-only globals, "safe" environments), which is
        # what lets Luau take its fast paths for builtins such as bit32 and buffer.
        self.lua.sandbox(True)
        self.module = load()

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
