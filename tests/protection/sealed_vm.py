"""Running sealed copies in the real Luau VM with the SDK, against an `/unlock` answered
in Python the way the server answers it (the e2e test uses the real server).

A `SealedWorld` is one Luau VM: Roblox's `shared` table, the SDK module, and one client for
a license whose `/unlock` hands out that license's sealed-code key (or refuses)."""

from __future__ import annotations

import json
from typing import Any

from licore.sealing import seal, sealed_code_key
from tests.protection.vm import _HARNESS, normalise
from tests.sdk.luau_sdk import SDK_SOURCE, as_bytes
from tests.support.luau_vm import pluau

NOW = 1_700_000_000


class SealedWorld:
    def __init__(self, license_secret: bytes | None, *, license_key: str = "KEY-1",
                 sealed_key: str | None = None) -> None:
        """`license_secret` None: `/unlock` refuses (no live license). `sealed_key`
        overrides the key `/unlock` hands out."""
        self.lua: Any = pluau().Lua()
        self.unlocks = 0
        self.lua.globals().set("shared", self.lua.create_table())
        self.module = self.lua.load_chunk(SDK_SOURCE.read_text(encoding="utf-8"), "=licore")()[0]
        key = sealed_key if sealed_key is not None else (
            sealed_code_key(license_secret) if license_secret is not None else None)

        def http(_lua: Any, args: tuple[Any, ...]) -> tuple[bool, int, str]:
            url, body = (as_bytes(a).decode() for a in args)
            self.unlocks += 1
            sent = json.loads(body)
            if key is None or not url.endswith("/unlock") or sent["key"] != license_key:
                return True, 200, '{"ok":false}'
            plain = json.dumps({"nonce": sent["nonce"], "data": None, "exp": NOW + 300,
                                "sealed": key}).encode()
            sealed = seal(license_key, sent["nonce"], plain)
            return True, 200, json.dumps({"ok": True, "exp": NOW + 300,
                                          "cipher": sealed.cipher, "tag": sealed.tag})

        nonces = iter(f"nonce{i:012d}" for i in range(10_000))
        config = self.lua.create_table()
        config.set("runtimeUrl", "https://licore.test/runtime")
        config.set("productId", "prod-1")
        config.set("licenseKey", license_key)
        config.set("userId", 42)
        config.set("http", self.lua.create_function(http))
        config.set("newNonce", self.lua.create_function(lambda *_: (next(nonces),)))
        config.set("now", self.lua.create_function(lambda *_: (NOW,)))
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
