"""Sealing 1 MiB (`licore.sealing.seal`) against the same-run bound of one SHA-256 call per
32-byte keystream block over that block's message (`nonce|i`): the least any HMAC keystream
built from Python calls can cost, since HMAC is two such hashes a block.

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

    t_bound = min(best(bound, 5), best(bound, 5))
    t_seal = best(lambda: seal("lic_bench0000000000000000000000000000000000", NONCE,
                               plaintext), 5)
    t_bound = min(t_bound, best(bound, 5))
    print(f"SHA-256 per block (bound) {t_bound * 1000:.1f} ms; seal 1 MiB "
          f"{t_seal * 1000:.1f} ms; ratio {t_seal / t_bound:.1f} (target 12 or less)")


if __name__ == "__main__":
    main()
