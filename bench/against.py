"""The runtime calls of an earlier commit beside today's, in one run: the same machine, the
same moment, rounds taken in turn, so a change's cost is read as a ratio and not against a
figure measured on another evening.

    python -m bench.against e2d1f20 [--today REV] [--only sqlite] [--rounds 8] [--duration 3]

It checks the earlier commit out into a temporary worktree, loads each code's own database
with the same number of licenses (each through its own `bench/runtime.py` loader), and starts
three servers: the bare app (bench/bare_app.py), `licore serve --only runtime` of the earlier
commit (its sources first on PYTHONPATH) and of today's. Each round drives every server once
with wrk, in a rotating order, and reads the server's CPU time a request, which moves less
with the machine's load than requests a second. It prints, per call, the CPU ratio of each
licore to the bare app (bench/runtime.py's figure) as medians over the rounds, and today's
CPU a request over the earlier commit's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

from bench import runtime
from bench.runtime import BIN, PG, ROOT, drive, free_port, start

LOAD_OLD = """
import asyncio, json, sys
import bench.runtime as r
r.KEK = bytes.fromhex(sys.argv[1])
r.LICENSES = int(sys.argv[2])
print(json.dumps(asyncio.run(r.load(sys.argv[3]))))
"""


def lua(sample: list[tuple[str, str, str]], path: str, where: Path) -> Path:
    return runtime.scripts(sample, [path], where)[path]


def serve(url: str, tmp: Path, pythonpath: str | None) -> tuple[int, subprocess.Popen[bytes]]:
    port = free_port()
    env = runtime.licore_env(url, tmp)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return port, start([str(BIN / "licore"), "serve", "--port", str(port), "--only", "runtime"],
                       env, port, tmp)


def databases(backend: str, tmp: Path) -> tuple[str, str, list[str]]:
    """Two empty databases (earlier, today) and the PostgreSQL schemas to drop after."""
    if backend == "sqlite":
        return f"sqlite:///{tmp / 'old.db'}", f"sqlite:///{tmp / 'new.db'}", []
    schemas = ["bench_" + secrets.token_hex(4) for _ in range(2)]
    with psycopg.connect(PG, autocommit=True) as conn:
        for schema in schemas:
            conn.execute(f"CREATE SCHEMA {schema}")
    old, new = (f"{PG}?options=-csearch_path%3D{s}" for s in schemas)
    return old, new, schemas


def load_in(tree: Path, url: str, licenses: int) -> list[tuple[str, str, str]]:
    """`licenses` loaded into `url` by the loader of the commit checked out at `tree`."""
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_OLD, runtime.KEK.hex(), str(licenses), url],
        cwd=tree, env={**os.environ, "PYTHONPATH": f"{tree / 'src'}:{tree}"},
        capture_output=True, text=True, check=True).stdout
    return [(u, p, k) for u, p, k in json.loads(loaded.strip().splitlines()[-1])]


def bench_backend(backend: str, old_tree: Path, new_tree: Path | None,
                  args: argparse.Namespace, tmp: Path) -> None:
    """`new_tree`: another commit checked out to stand for today (None: this checkout)."""
    old_url, new_url, schemas = databases(backend, tmp)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        old_sample = load_in(old_tree, old_url, args.licenses)
        new_sample = (load_in(new_tree, new_url, args.licenses) if new_tree
                      else asyncio.run(runtime.load(new_url)))
        bp = free_port()
        bare = start([str(BIN / "hypercorn"), "--bind", f"127.0.0.1:{bp}", "bare_app:app"],
                     {**os.environ, "PYTHONPATH": str(ROOT / "bench")}, bp, tmp)
        servers = {"bare": (bp, bare), "earlier": serve(old_url, tmp, str(old_tree / "src")),
                   "today": serve(new_url, tmp, str(new_tree / "src") if new_tree else None)}
        procs = [p for _, p in servers.values()]
        for path in args.paths:
            scripts = {"bare": lua(new_sample, path, tmp / "new"),
                       "earlier": lua(old_sample, path, tmp / "old"),
                       "today": lua(new_sample, path, tmp / "new")}
            warm = argparse.Namespace(duration=2, connections=8)
            for name, (port, _) in servers.items():
                drive(port, path, scripts[name], warm)
            cpu: dict[str, list[float]] = {name: [] for name in servers}
            names = list(servers)
            run = argparse.Namespace(duration=args.duration, connections=args.connections)
            for r in range(args.rounds):
                for name in names[r % 3:] + names[:r % 3]:
                    port, proc = servers[name]
                    cpu[name].append(drive(port, path, scripts[name], run, proc.pid)["cpu_ms"])
            ratio = {name: [b / m for b, m in zip(cpu["bare"], cpu[name], strict=True)]
                     for name in ("earlier", "today")}
            change = [t / e for t, e in zip(cpu["today"], cpu["earlier"], strict=True)]
            print(f"{backend:<9} {path:<16} earlier {statistics.median(ratio['earlier']):.3f} "
                  f"today {statistics.median(ratio['today']):.3f} (CPU ratio to the bare app, "
                  f"median of {args.rounds}); today's CPU a call {statistics.median(change):.3f}x "
                  f"the earlier's ({min(change):.3f}-{max(change):.3f}); load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        if schemas:
            with psycopg.connect(PG, autocommit=True) as conn:
                for schema in schemas:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("commit")
    parser.add_argument("--today", help="another commit to stand for today's code")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--duration", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--licenses", type=int, default=20_000)
    parser.add_argument("--paths", nargs="*", default=["/runtime/check", "/runtime/unlock"])
    args = parser.parse_args()
    runtime.LICENSES = args.licenses
    if shutil.which("wrk") is None:
        sys.exit("bench/against.py needs wrk: apt-get install wrk")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "old").mkdir()
        (tmp / "new").mkdir()
        trees = {"tree": args.commit, **({"today-tree": args.today} if args.today else {})}
        for name, commit in trees.items():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(tmp / name), commit], check=True)
        try:
            for backend in ("sqlite", "postgres"):
                if args.only in (None, backend):
                    bench_backend(backend, tmp / "tree",
                                  tmp / "today-tree" if args.today else None, args, tmp)
        finally:
            for name in trees:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tmp / name)], check=False)


if __name__ == "__main__":
    main()
