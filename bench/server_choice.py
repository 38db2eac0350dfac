"""What the server choice costs: the bare app (bench/bare_app.py) served by Hypercorn, the
server licore bundles (the design's choice), and by Uvicorn with httptools and uvloop, each
with one worker, measured in turn in the same run.

    python bench/server_choice.py [--duration 5] [--runs 3] [--connections 1 32]

Needs wrk and Uvicorn (`pip install uvicorn httptools uvloop`; not a licore dependency).
Prints requests a second and server CPU per request for each, and Uvicorn's figures as
multiples of Hypercorn's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench.runtime import BIN, ROOT, drive, free_port, scripts, start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, nargs="*", default=[1, 32])
    args = parser.parse_args()
    if shutil.which("wrk") is None or not (BIN / "uvicorn").exists():
        sys.exit("bench/server_choice.py needs wrk and uvicorn with httptools and uvloop")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench")}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        script = scripts([("1", "p", "k")], ["/runtime/check"], tmp)["/runtime/check"]
        hp, up = free_port(), free_port()
        servers = {
            "hypercorn": (hp, start([str(BIN / "hypercorn"), "--bind", f"127.0.0.1:{hp}",
                                     "bare_app:app"], env, hp, tmp)),
            "uvicorn": (up, start([str(BIN / "uvicorn"), "--port", str(up), "--http",
                                   "httptools", "--loop", "uvloop", "--no-access-log",
                                   "bare_app:app"], env, up, tmp)),
        }
        try:
            print(f"{'connections':>11} {'server':<10} {'req/s':>8} {'cpu ms':>7}   load")
            for connections in args.connections:
                run = argparse.Namespace(duration=args.duration, connections=connections)
                rps: dict[str, list[float]] = {name: [] for name in servers}
                cpu: dict[str, list[float]] = {name: [] for name in servers}
                for _ in range(args.runs):
                    for name, (port, proc) in servers.items():
                        got = drive(port, "/runtime/check", script, run, proc.pid)
                        rps[name].append(got["rps"])
                        cpu[name].append(got["cpu_ms"])
                        print(f"{connections:>11} {name:<10} {got['rps']:>8.0f} "
                              f"{got['cpu_ms']:>7.3f}   {os.getloadavg()[0]:.1f}")
                ratio = [u / h for u, h in zip(rps["uvicorn"], rps["hypercorn"], strict=True)]
                cpu_ratio = [h / u for u, h in zip(cpu["uvicorn"], cpu["hypercorn"],
                                                   strict=True)]
                print(f"{connections} connections: Uvicorn serves {statistics.median(ratio):.2f}x "
                      f"Hypercorn's req/s ({min(ratio):.2f}-{max(ratio):.2f}) at "
                      f"{statistics.median(cpu_ratio):.2f}x less CPU a request "
                      f"({min(cpu_ratio):.2f}-{max(cpu_ratio):.2f})")
        finally:
            for _, proc in servers.values():
                proc.terminate()
                proc.wait(10)


if __name__ == "__main__":
    main()
