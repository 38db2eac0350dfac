"""Two hosts on one database: two `licore serve --only runtime` processes bound to two
loopback addresses (127.0.0.1 and 127.0.0.2, as two machines behind a balancer would be),
both on one PostgreSQL database, against one such process alone; the bare app the same way
for comparison. Measured in turn in one run.

    python -m bench.hosts [--duration 5] [--runs 2] [--licenses 10000]

Half the connections go to each host (two wrk processes at once); the figure is the sum of
the two hosts' requests a second over one host's with all the connections. On one 2-core
machine "two hosts" share the cores: the figure says whether anything shared (a database
row, a lock) holds the second process back, not what two real machines would add.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg

from bench import runtime
from bench.runtime import BIN, PG, ROOT, drive, free_port, licore_env, loaded, scripts, start

HOSTS = ("127.0.0.1", "127.0.0.2")


def launch(kind: str, url: str, tmp: Path, host: str) -> tuple[int, subprocess.Popen[bytes]]:
    port = free_port()
    if kind == "licore":
        env = licore_env(url, tmp)
        argv = [str(BIN / "licore"), "serve", "--host", host, "--port", str(port),
                "--only", "runtime"]
    else:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "bench")}
        argv = [str(BIN / "hypercorn"), "--bind", f"{host}:{port}", "bare_app:app"]
    return port, start(argv, env, port, tmp, host=host)


def together(targets: list[tuple[str, int, int]], path: str, script: Path,
             args: argparse.Namespace) -> float:
    """Requests a second of all `targets` (host, port, pid) driven at once."""
    share = argparse.Namespace(duration=args.duration,
                               connections=max(1, args.connections // len(targets)))
    with ThreadPoolExecutor(len(targets)) as pool:
        got = list(pool.map(lambda t: drive(t[1], path, script, share, t[2], t[0]), targets))
    return sum(g["rps"] for g in got)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--licenses", type=int, default=10_000)
    parser.add_argument("--paths", nargs="*", default=["/runtime/check", "/runtime/unlock"])
    args = parser.parse_args()
    runtime.LICENSES = args.licenses
    if shutil.which("wrk") is None:
        sys.exit("bench/hosts.py needs wrk: apt-get install wrk")
    schema = "bench_" + secrets.token_hex(4)
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{PG}?options=-csearch_path%3D{schema}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            sample, note = loaded("postgres", url)
            print(note)
            lua = scripts(sample, args.paths, tmp)
            started = {(kind, host): launch(kind, url, tmp, host)
                       for kind in ("licore", "bare") for host in HOSTS}
            procs = [p for _, p in started.values()]
            print(f"{'server':<7} {'endpoint':<16} {'1 host':>8} {'2 hosts':>8} {'x':>6}   load")
            for path, script in lua.items():
                for kind in ("licore", "bare"):
                    ratios = []
                    for _ in range(args.runs):
                        one = together([("127.0.0.1", *_port_pid(started[kind, HOSTS[0]]))],
                                       path, script, args)
                        two = together([(h, *_port_pid(started[kind, h])) for h in HOSTS],
                                       path, script, args)
                        ratios.append(two / one)
                        print(f"{kind:<7} {path:<16} {one:>8.0f} {two:>8.0f} "
                              f"{two / one:>6.2f}   {os.getloadavg()[0]:.1f}")
                    print(f"{kind} {path}: two hosts {statistics.median(ratios):.2f}x one "
                          f"({min(ratios):.2f}-{max(ratios):.2f})")
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)
        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _port_pid(started: tuple[int, subprocess.Popen[bytes]]) -> tuple[int, int]:
    return started[0], started[1].pid


if __name__ == "__main__":
    main()
