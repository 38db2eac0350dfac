"""Two revisions of licore's runtime path against each other, in one run: A/B.

    .venv/bin/python bench/runtime_ab.py --a PATH/TO/OLD/src [--b src] [--connections 1]
        [--path /runtime/check] [--rounds 10] [--duration 4] [--only sqlite|postgres]

Single runs of `bench/runtime.py` moved the CPU-over-the-floor figure by up to 1.5x from run
to run on the shared 2-core machine, more than most changes to measure. Here both revisions
serve at once from the same database (`licore serve --only runtime`, each with its own
`PYTHONPATH`: `--a` a checkout's `src`, such as a `git worktree` of an earlier commit), and
wrk drives each in turn, the order swapped every round, so the machine's drift falls on both.
It prints each revision's median CPU time a call and p50, and the median over rounds of
B's CPU a call over A's in the same round (below 1: B is cheaper).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import runtime as rt  # noqa: E402


def _database(only: str, tmp: Path) -> str:
    if only == "sqlite":
        return f"sqlite:///{tmp / 'ab.db'}"
    with psycopg.connect(rt.PG, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    return rt.PG


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", required=True, help="the src folder of revision A")
    parser.add_argument("--b", default=str(ROOT / "src"), help="revision B's (this one's)")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--path", default="/runtime/check", choices=rt.PATHS)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--duration", type=int, default=4)
    parser.add_argument("--licenses", type=int, default=5000)
    parser.add_argument("--only", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    rt.LICENSES = args.licenses
    tmp = Path(tempfile.mkdtemp())
    url = _database(args.only, tmp)
    sample = asyncio.run(rt.load(url))
    servers = {}
    for name, src in (("A", args.a), ("B", args.b)):
        port = rt.free_port()
        env = {**rt.licore_env(url, tmp), "PYTHONPATH": src}
        servers[name] = (port, rt.start([str(rt.BIN / "licore"), "serve", "--port", str(port),
                                         "--only", "runtime"], env, port, tmp))
    script = rt.scripts(sample, [args.path], tmp)[args.path]
    cpu: dict[str, list[float]] = {"A": [], "B": []}
    p50: dict[str, list[float]] = {"A": [], "B": []}
    try:
        for port, _ in servers.values():  # warm up
            rt.drive(port, args.path, script, argparse.Namespace(duration=2, connections=8))
        measure = argparse.Namespace(duration=args.duration, connections=args.connections)
        for n in range(args.rounds):
            for name in ("A", "B") if n % 2 == 0 else ("B", "A"):
                port, proc = servers[name]
                got = rt.drive(port, args.path, script, measure, proc.pid)
                cpu[name].append(got["cpu_ms"])
                p50[name].append(got["p50"])
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait(10)
    ratios = [b / a for a, b in zip(cpu["A"], cpu["B"], strict=True)]
    print(f"{args.path}, {args.connections} connection(s), {args.only}, {args.rounds} rounds")
    for name in ("A", "B"):
        print(f"  {name}: CPU a call {statistics.median(cpu[name]):.3f} ms, "
              f"p50 {statistics.median(p50[name]):.2f} ms")
    print(f"  B over A, CPU a call: median {statistics.median(ratios):.3f} "
          f"({min(ratios):.2f} to {max(ratios):.2f})")


if __name__ == "__main__":
    main()
