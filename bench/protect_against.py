"""CPU time to protect 1 MiB per preset, this checkout against another, interleaved.

Run from the repository root: `.venv/bin/python bench/protect_against.py /work/main`.

On a shared machine CPU time itself moves by 1.5x from one minute to the next, so runs of
the two checkouts one after the other compare moments more than code. Here one worker
process per checkout holds both shapes of `bench/protect.py`; the work is cut into chunks
(24 of the many scripts; the one script whole), each chunk handed to the two workers
alternately (who goes first alternates too), and the best of the rounds of each chunk is
summed per checkout.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ("minify", "light", "strong")
SHAPES = (("many", 24), ("one", 1))


def worker(root: str) -> None:
    """Protects what each stdin line asks ("shape preset first last"), prints its CPU s."""
    sys.path[:0] = [root, root + "/src"]
    from adapters_protection.luau_protector import LuauProtector
    from bench.protect import MIB, SECRET, many_scripts, one_script
    from licore.protection import parse_protection_settings

    protector = LuauProtector()
    shapes = {"many": many_scripts(MIB), "one": [("ServerScriptService/Big", one_script(MIB))]}
    rules = {p: parse_protection_settings({"rules": [{"paths": ["*"], "preset": p}]})
             for p in PRESETS}
    print(len(shapes["many"]), flush=True)
    for line in sys.stdin:
        shape, preset, first, last = line.split()
        start = time.process_time()
        for path, source in shapes[shape][int(first):int(last)]:
            protector.protect(path, source, rules[preset], SECRET)
        print(time.process_time() - start, flush=True)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("other", help="the other checkout (its own code is protected with)")
    args.add_argument("--rounds", type=int, default=3)
    args.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = args.parse_args()
    if opts.worker:
        worker(opts.other)
        return
    roots = {"other": opts.other, "this": str(ROOT)}
    workers = {name: subprocess.Popen(
        [sys.executable, __file__, "--worker", root], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True) for name, root in roots.items()}

    def ask(name: str, request: str) -> str:
        pipe = workers[name]
        assert pipe.stdin is not None and pipe.stdout is not None
        pipe.stdin.write(request + "\n")
        pipe.stdin.flush()
        return pipe.stdout.readline()

    counts: dict[str, int] = {}  # each worker says how many scripts it holds when ready
    for name, pipe in workers.items():
        assert pipe.stdout is not None
        counts[name] = int(pipe.stdout.readline())
    print(f"{'shape':<6}{'preset':<8}{'other s':>9}{'this s':>9}{'this/other':>12}")
    for shape, chunks in SHAPES:
        size = counts["this"] if shape == "many" else 1
        step = -(-size // chunks)
        for preset in PRESETS:
            best = {name: [float("inf")] * chunks for name in workers}
            for round_ in range(opts.rounds):
                for chunk in range(chunks):
                    order = list(workers) if (round_ + chunk) % 2 == 0 else list(workers)[::-1]
                    for name in order:
                        taken = float(ask(name, f"{shape} {preset} {chunk * step} "
                                                f"{min(size, (chunk + 1) * step)}"))
                        best[name][chunk] = min(best[name][chunk], taken)
            other, this = sum(best["other"]), sum(best["this"])
            print(f"{shape:<6}{preset:<8}{other:>9.2f}{this:>9.2f}{this / other:>12.2f}",
                  flush=True)
    for pipe in workers.values():
        pipe.terminate()


if __name__ == "__main__":
    main()
