"""Sealing 1 MiB (`licore.sealing.seal`) against two same-run SHA-256 bounds: one call per
32-byte keystream block over that block's message (`nonce|i`), the least any keystream made
of per-block Python calls can cost (HMAC is two such hashes a block); and one call over the
whole MiB, the hardware's hashing speed.

Run from the repository root: `.venv/bin/python -m bench.sealing`.
"""

from __future__ import annotations

import hashlib
import os

from bench.timing import best
from licore.sealing import seal

SIZE = 1 << 20
NONCE = "0123456789abcdef0123456789abcdef"


def main() -> None:
    plaintext = os.urandom(SIZE)
    prefix = NONCE.encode() + b"|"
    sha = hashlib.sha256
    blocks = (SIZE + 31) // 32

    def bound() -> bytes:
        return b"".join([sha(prefix + b"%d" % i).digest() for i in range(blocks)])

    def sealing() -> object:
        return seal("lic_bench0000000000000000000000000000000000", NONCE, plaintext)

    # Interleaved, best of each: the machine's load moves, so both see the same moments.
    t_bound = t_seal = t_whole = float("inf")
    for _ in range(9):
        t_bound = min(t_bound, best(bound, 1))
        t_seal = min(t_seal, best(sealing, 1))
        t_whole = min(t_whole, best(lambda: sha(plaintext).digest(), 1))
    print(f"seal 1 MiB {t_seal * 1000:.1f} ms; SHA-256 one call per block "
          f"{t_bound * 1000:.1f} ms (ratio {t_seal / t_bound:.1f}); SHA-256 of the whole MiB "
          f"in one call {t_whole * 1000:.2f} ms (ratio {t_seal / t_whole:.0f})")


if __name__ == "__main__":
    main()
