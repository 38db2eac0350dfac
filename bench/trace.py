"""Time to trace a large leaked script against many licenses, and how it grows with size.

Run from the repository root: `.venv/bin/python bench/trace.py [--mib 40] [--licenses 1000]`.

The leaked file is the test corpus protected with `strong` for one license, as one script,
repeated to the size asked (the shape a leaker pasting a product into one file gives), then
renamed the way the attack tests rename. It is traced against that many candidate licenses.
The baseline is reading all of the same text's tokens (`watermark.tokens`), measured in the
same run. Up to 4 MiB tracing reads every token and more; beyond, it reads the watermark
from a keyed 4 MiB sample and only searches the whole text for keys, so the ratio falls.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from adapters_protection.luau_protector import LuauProtector  # noqa: E402
from adapters_protection.tracing import trace  # noqa: E402
from adapters_protection.watermark import tokens  # noqa: E402
from licore.protection import Candidate, parse_protection_settings  # noqa: E402

MIB = 1024 * 1024
RULES = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})


def leaked(size: int, secret: bytes) -> str:
    protector = LuauProtector()
    corpus = [(p.stem, p.read_text()) for p in sorted((ROOT / "tests/protection/corpus")
                                                      .glob("*.luau"))]
    copy = "\n".join(protector.protect(name, source, RULES, secret) for name, source in corpus)
    return (copy * (size // len(copy) + 1))[:size]


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--mib", type=float, default=40)
    args.add_argument("--licenses", type=int, default=1000)
    opts = args.parse_args()
    secrets = [f"lk_bench{i:035d}".encode() for i in range(opts.licenses)]
    candidates = [Candidate(f"lic_{i}", s) for i, s in enumerate(secrets)]
    for size in (int(opts.mib * MIB) // 8, int(opts.mib * MIB)):
        text = leaked(size, secrets[7])
        start = time.perf_counter()
        sum(1 for _ in tokens(text))
        base = time.perf_counter() - start
        start = time.perf_counter()
        found = trace([("Leaked.lua", text)], candidates)
        took = time.perf_counter() - start
        print(f"{size / MIB:6.1f} MiB, {opts.licenses} licenses: traced in {took:6.1f} s "
              f"({took / base:4.1f}x reading its tokens, {base:5.1f} s); named "
              f"{found.license_id}, {found.watermark_positions} positions")


if __name__ == "__main__":
    main()
