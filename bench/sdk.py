"""Time for the Luau SDK (real VM) to verify+decrypt sealed answers, relative to licore.sealing.

Run from the repository root: `.venv/bin/python -m bench.sdk`.
"""

from __future__ import annotations

import json

from tests.sdk.luau_sdk import LuauSdk

from bench.timing import best
from licore.sealing import Sealed, seal, verify_payload

KEY = "LIC-BENCH-0001"
NONCE = "0123456789abcdefBENCH"
NOW = 1_700_000_000


def _payload(size: int, kind: str) -> bytes:
    head = {"nonce": NONCE, "version": "1.0", "instances": []} if kind == "update" else {
        "nonce": NONCE, "data": ""}
    base = len(json.dumps(head))
    filler = "x" * max(0, size - base)
    body = {**head, "data": filler} if kind == "unlock" else {**head, "pad": filler}
    return json.dumps(body).encode()



def main() -> None:
    sdk = LuauSdk()
    verify = sdk.module.get("verifyPayload")
    rows = []
    for label, size, kind, exp, repeat in [
        ("/unlock 1 KiB", 1024, "unlock", NOW + 300, 5),
        ("/update 1 MiB", 1024 * 1024, "update", None, 1),
    ]:
        sealed = seal(KEY, NONCE, _payload(size, kind))

        def luau(s: Sealed = sealed, exp: int | None = exp) -> object:
            got = verify(KEY, NONCE, s.cipher, s.tag, NOW, exp)
            assert got[0] is not None, got
            return got

        def python(s: Sealed = sealed, exp: int | None = exp) -> object:
            return verify_payload(KEY, NONCE, s.cipher, s.tag, NOW, exp)

        t_luau, t_py = best(luau, repeat), best(python, repeat)
        rows.append((label, t_luau, t_py))
    print(f"{'payload':<16}{'Luau VM (s)':>14}{'Python hmac (s)':>18}{'ratio':>10}")
    for label, t_luau, t_py in rows:
        print(f"{label:<16}{t_luau:>14.4f}{t_py:>18.4f}{t_luau / t_py:>9.1f}x")


if __name__ == "__main__":
    main()
