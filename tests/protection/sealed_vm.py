"""Running sealed copies in the real Luau VM with the SDK, against an `/unlock` answered
in Python the way the server answers it (the e2e test uses the real server).

A `SealedWorld` is one Luau VM: Roblox's `shared` table, the SDK module, and one client for
a license whose `/unlock` hands out that license's sealed-code key (or refuses)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

from licore.sealing import seal, sealed_code_key
from tests.protection.vm import _HARNESS, normalise
from tests.sdk.luau_sdk import as_bytes, sdk_loader
from tests.support.luau_vm import pluau

NOW = 1_700_000_000


Http = Callable[[str, str], tuple[bool, int, str]]


class SealedWorld:
    def __init__(self, license_secret: bytes | None, *, license_key: str = "KEY-1",
                 sealed_key: str | None = None, http: Http | None = None,
                 runtime_url: str = "https://licore.test/runtime", product_id: str = "prod-1",
                 user_id: str | int = 42, now: int = NOW, before_sdk: str = "") -> None:
        """`license_secret` None: `/unlock` refuses (no live license). `sealed_key`
        overrides the key `/unlock` hands out. `http` replaces the stand-in server (a real
        server's runtime API, for the e2e test). `before_sdk` is Luau another script runs
        before the SDK is required."""
        self.lua: Any = pluau().Lua()
        self.unlocks = 0
        self.asked: list[str] = []  # each /unlock's `sealed_for` ("" when not sent)
        self.now = now
        self.lua.globals().set("shared", self.lua.create_table())
        if before_sdk:
            self.lua.load_chunk(before_sdk, "=other")()
        self.module = sdk_loader(self.lua, "=licore")()
        def key_for(sealed_for: str) -> str | None:
            if sealed_key is not None:
                return sealed_key
            return (sealed_code_key(license_secret, sealed_for)
                    if license_secret is not None else None)

        def lua_http(_lua: Any, args: tuple[Any, ...]) -> tuple[bool, int, str]:
            url, body = (as_bytes(a).decode() for a in args)
            self.unlocks += 1
            if http is not None:
                return http(url, body)
            sent = json.loads(body)
            self.asked.append(sent.get("sealed_for", ""))
            key = key_for(sent.get("sealed_for", ""))
            if key is None or not url.endswith("/unlock") or sent["key"] != license_key:
                return True, 200, '{"ok":false}'
            plain = json.dumps({"nonce": sent["nonce"], "data": None, "exp": self.now + 300,
                                "sealed": key}).encode()
            sealed = seal(license_key, sent["nonce"], plain)
            return True, 200, json.dumps({"ok": True, "exp": self.now + 300,
                                          "cipher": sealed.cipher, "tag": sealed.tag})

        nonces = iter(f"n{secrets.token_hex(12)}{i:06d}" for i in range(10_000))
        config = self.lua.create_table()
        config.set("runtimeUrl", runtime_url)
        config.set("productId", product_id)
        config.set("licenseKey", license_key)
        config.set("userId", user_id)
        config.set("http", self.lua.create_function(lua_http))
        config.set("newNonce", self.lua.create_function(lambda *_: (next(nonces),)))
        config.set("now", self.lua.create_function(lambda *_: (self.now,)))
        config.set("sleep", self.lua.create_function(lambda *_: ()))
        self.client = self.module.get("new")(config)
        self.harness = self.lua.load_chunk(_HARNESS, "=harness")()[0]

    def run(self, source: str) -> str:
        """What `source` printed, then `error: ...` if it failed (normalised as vm.run)."""
        try:
            main = self.lua.load_chunk(source, "=script")
        except RuntimeError as error:
            return "syntax error: " + normalise(str(error).split("\n")[0])
        return normalise("".join(str(v) for v in self.harness(main)))

    def run_exact(self, source: str) -> str:
        """As `run`, without normalising positions (to compare error lines)."""
        main = self.lua.load_chunk(source, "=script")
        return "".join(str(v) for v in self.harness(main))
