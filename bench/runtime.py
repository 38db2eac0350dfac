"""Runtime API throughput and latency against a bare Starlette app, in the same run.

    .venv/bin/python bench/runtime.py [--duration 10] [--connections 32] [--only sqlite]
        [--paths /runtime/unlock ...] [--runs 3] [--licenses 100000]
    .venv/bin/python bench/runtime.py --workers 1 2 4 --only postgres --duration 5

Loads 100,000 licenses across 100 products, starts `licore serve` (one Hypercorn worker),
the bare app and the same-work app (`bench/floor_app.py`, the floor: the call's own work
done the cheapest honest way) under the same Hypercorn settings, drives each with wrk
(Debian's `wrk`; one thread, so the server keeps the other core) and prints requests per
second and p50/p99 latency for /check, /unlock and /version as ratios to the bare app, for
SQLite and PostgreSQL, with the one-minute load average when each measurement began, and
the server processes' CPU time per request (bare's over licore's: the throughput ratio each
would have with a core to itself, which moves less than req/s on a shared machine), and the
floor's req/s, p50 and CPU time a call with licore's CPU time a call over it ("x cpu"; the
aim is at most 1.2). With `--runs N` the three are measured in turn N times per endpoint and
the median ratios are printed too. `--connections 1` measures a lone caller.

With `--workers 1 2 4` it measures how throughput grows with server processes instead: for
each count in turn, licore (`licore serve --workers N`) and the bare app (Hypercorn
`--workers N`) on the same data, each call driven against both, and prints req/s with the
ratio to the first count's, for licore and the bare app side by side (the bare app's ratio is
what the machine itself gives another worker).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters_crypto import AesGcmKeyVault, Argon2Passwords, SystemClock, SystemRandom  # noqa: E402
from adapters_formats.codec import RobloxModelCodec  # noqa: E402
from adapters_protection.luau_protector import LuauProtector  # noqa: E402
from adapters_storage import open_storage  # noqa: E402
from licore.licenses import LicenseState, Source  # noqa: E402
from licore.model import Account, License, Membership, Product, Studio, UnlockData  # noqa: E402
from licore.scopes import Permission  # noqa: E402
from licore.services.deps import Deps  # noqa: E402
from licore.tokens import make_license_key  # noqa: E402

PG = os.environ.get("LICORE_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
KEK = secrets.token_bytes(32)
PRODUCTS, SAMPLE = 100, 2000
LICENSES = 100_000  # `--licenses` changes it
PATHS = ["/runtime/check", "/runtime/unlock", "/runtime/version"]
BIN = Path(sys.executable).parent

LUA = r"""
local entries = {%(entries)s}
local path = "%(path)s"
local chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
math.randomseed(os.time())
local function nonce()
  local t = {}
  for i = 1, 32 do local r = math.random(1, 62); t[i] = chars:sub(r, r) end
  return table.concat(t)
end
request = function()
  local e = entries[math.random(1, #entries)]
  local body = '{"user_id":"' .. e[1] .. '","product_id":"' .. e[2] .. '","key":"' .. e[3] .. '"'
  if path == "/runtime/unlock" then body = body .. ',"nonce":"' .. nonce() .. '"' end
  body = body .. '}'
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
done = function(summary, latency, requests)
  io.write(string.format('RESULT {"requests":%%d,"duration_us":%%d,"p50":%%d,"p99":%%d,' ..
    '"errors":%%d,"non2xx":%%d}\n', summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout, summary.errors.status))
end
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def load(url: str) -> list[tuple[str, str, str]]:
    deps = Deps(open_storage(url), SystemClock(), SystemRandom(), AesGcmKeyVault(KEK),
                Argon2Passwords(), RobloxModelCodec(), LuauProtector())
    await deps.storage.migrate()
    now = deps.clock.now()
    sample: list[tuple[str, str, str]] = []
    async with deps.storage.unit_of_work() as uow:
        owner = Account(deps.new_id("acc"), "1", "owner", None, now)
        await uow.accounts.add(owner)
        studio = Studio(deps.new_id("std"), "Bench", owner.id, 3, now)
        await uow.studios.add(studio)
        await uow.studios.put_membership(Membership(studio.id, owner.id, frozenset(Permission)))
        products = []
        for i in range(PRODUCTS):
            p = Product(deps.new_id("prd"), studio.id, "", f"P{i}", "", "", 0, True, True,
                        now, now, current_version_id="ver_1", current_version="1.0.0",
                        unlock_data=UnlockData.of({"level": i, "flags": list(range(8))}))
            products.append(await uow.products.add(p, f"p{i}"))
    # Below SAMPLE (or PRODUCTS) licenses every license is sampled (or has a product of
    # its own): the steps are at least 1.
    per_product = max(1, LICENSES // PRODUCTS)
    every = max(1, LICENSES // SAMPLE)
    for start in range(0, LICENSES, 10_000):
        async with deps.storage.unit_of_work() as uow:
            for n in range(start, min(start + 10_000, LICENSES)):
                product = products[min(n // per_product, PRODUCTS - 1)]
                key = make_license_key(secrets.token_bytes(48))
                lic = License(deps.new_id("lic"), product.id, str(10_000 + n), Source.GRANT,
                              LicenseState.ACTIVE, now, now)
                lic = License(lic.id, lic.product_id, lic.platform_id, lic.source, lic.state,
                              now, now, deps.vault.encrypt(key, lic.id),
                              deps.vault.lookup_digest(key), 1)
                await uow.licenses.add(lic)
                if n % every == 0:
                    sample.append((lic.platform_id, product.id, key))
    await deps.storage.close()
    return sample


def start(argv: list[str], env: dict[str, str], port: int, cwd: Path,
          workers: int = 1, host: str = "127.0.0.1") -> subprocess.Popen[bytes]:
    """Start a server and return once it answers and all its `workers` have started: one
    worker answering says nothing of the others, still importing on a loaded machine, so
    also until no process of the server used more than a twentieth of a second of CPU in
    the last second."""
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60 + 30 * workers
    answered = False
    before: dict[int, float] = {}
    while time.monotonic() < deadline:
        try:
            httpx.post(f"http://{host}:{port}/runtime/check", json={}, timeout=1)
            answered = True
        except httpx.HTTPError:
            pass
        now = {p: cpu_seconds(p, alone=True) for p in _tree(proc.pid)}
        idle = all(now[p] - before.get(p, 0.0) < 0.05 for p in now)
        if answered and idle and len(now) >= workers:
            return proc
        before = now
        time.sleep(1)
    proc.kill()
    raise RuntimeError(f"{argv} did not start")


def _tree(pid: int) -> list[int]:
    """`pid` and every process under it (Hypercorn serves from a child process)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            todo += [int(c) for c in task.read_text().split()]
    return found


def cpu_seconds(pid: int, alone: bool = False) -> float:
    """User and system CPU time of the server's processes so far (of `pid` alone with
    `alone`). On a loaded machine the server gets less than a core, so its requests a second
    fall, but the CPU time a request costs moves much less: the steadier ratio to the bare
    app."""
    ticks = 0
    for p in [pid] if alone else _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def drive(port: int, path: str, script: Path, args: argparse.Namespace,
          pid: int = 0, host: str = "127.0.0.1") -> dict[str, float]:
    cpu = cpu_seconds(pid) if pid else 0.0
    out = subprocess.run(
        ["wrk", "-t1", f"-c{args.connections}", f"-d{args.duration}s", "-s", str(script),
         f"http://{host}:{port}{path}"], capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    r = json.loads(line[7:])
    cpu = cpu_seconds(pid) - cpu if pid else 0.0
    return {"rps": r["requests"] / (r["duration_us"] / 1e6), "p50": r["p50"] / 1000,
            "p99": r["p99"] / 1000, "errors": r["errors"] + r["non2xx"],
            "cpu_ms": 1000 * cpu / max(1, r["requests"])}


def licore_env(url: str, tmp: Path) -> dict[str, str]:
    """What a benchmarked `licore serve` runs with: the database, the benchmark's key (the
    loader sealed the licenses with it), a data folder, and rate limits out of the way."""
    return {**os.environ, "LICORE_DATABASE_URL": url, "LICORE_KEK": KEK.hex(),
            "LICORE_DATA_DIR": str(tmp), "LICORE_RUNTIME_KEY_RATE_LIMIT": "1000000000",
            "LICORE_RUNTIME_IP_RATE_LIMIT": "1000000000"}


def servers(url: str, tmp: Path, workers: int = 1
            ) -> tuple[int, subprocess.Popen[bytes], int, subprocess.Popen[bytes]]:
    """licore and the bare app, each with `workers` Hypercorn workers: (port, process) each."""
    env = licore_env(url, tmp)
    lp, bp = free_port(), free_port()
    licore = start([str(BIN / "licore"), "serve", "--port", str(lp), "--only", "runtime",
                    "--workers", str(workers)], env, lp, tmp, workers)
    bare = start([str(BIN / "hypercorn"), "--bind", f"127.0.0.1:{bp}", "--workers",
                  str(workers), "bare_app:app"],
                 {**os.environ, "PYTHONPATH": str(ROOT / "bench")}, bp, tmp, workers)
    return lp, licore, bp, bare


def scripts(sample: list[tuple[str, str, str]], paths: list[str], tmp: Path) -> dict[str, Path]:
    entries = ",".join(f'{{"{u}","{p}","{k}"}}' for u, p, k in sample)
    found = {}
    for path in paths:
        found[path] = tmp / f"{path.rsplit('/', 1)[1]}.lua"
        found[path].write_text(LUA % {"entries": entries, "path": path})
    return found


def loaded(name: str, url: str) -> tuple[list[tuple[str, str, str]], str]:
    t0 = time.perf_counter()
    sample = asyncio.run(load(url))
    return sample, (f"{name}: loaded {LICENSES:,} licenses across {PRODUCTS} products in "
                    f"{time.perf_counter() - t0:.1f} s")


def floor_server(url: str, tmp: Path) -> tuple[int, subprocess.Popen[bytes]]:
    """The same-work app (`bench/floor_app.py`) on the same data, same Hypercorn settings."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench"), "LICORE_DATABASE_URL": url,
           "LICORE_KEK": KEK.hex()}
    return port, start([str(BIN / "hypercorn"), "--bind", f"127.0.0.1:{port}",
                        "floor_app:app"], env, port, tmp)


def passing(port: int, sample: list[tuple[str, str, str]], paths: list[str]) -> None:
    """Each call passed for a license of the sample (`success` for /check, `ok` for the
    others): a floor that refused every call would be cheap for the wrong reason."""
    user, product, key = sample[0]
    for path in paths:
        body = {"user_id": user, "product_id": product, "key": key,
                "nonce": secrets.token_hex(16)}
        got = httpx.post(f"http://127.0.0.1:{port}{path}", json=body, timeout=10).json()
        passed = got.get("success" if path.endswith("check") else "ok") is True
        if not passed or (path.endswith("unlock") and "cipher" not in got):
            raise RuntimeError(f"{path} on port {port} answered {got}")


def bench_backend(name: str, url: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    sample, note = loaded(name, url)
    lp, licore, bp, bare = servers(url, tmp)
    fp, floor = floor_server(url, tmp)
    notes = [note]
    rows: list[str] = []
    try:
        for port in (lp, fp):
            passing(port, sample, args.paths)
        for path, script in scripts(sample, args.paths, tmp).items():
            drive(lp, path, script, argparse.Namespace(duration=2, connections=8))  # warm up
            drive(fp, path, script, argparse.Namespace(duration=2, connections=8))
            ratios: list[float] = []
            cpu_ratios: list[float] = []
            floor_cpu: list[float] = []
            for _ in range(args.runs):
                load_avg = os.getloadavg()[0]
                base = drive(bp, path, script, args, bare.pid)
                same = drive(fp, path, script, args, floor.pid)
                mine = drive(lp, path, script, args, licore.pid)
                ratios.append(mine["rps"] / base["rps"])
                cpu_ratios.append(base["cpu_ms"] / mine["cpu_ms"])
                floor_cpu.append(mine["cpu_ms"] / same["cpu_ms"])
                rows.append(
                    f"{name:<10} {path:<16} {mine['rps']:>9.0f} {base['rps']:>9.0f} "
                    f"{ratios[-1]:>6.2f}   {mine['p50']:>6.2f} {base['p50']:>6.2f} "
                    f"{mine['p50'] / base['p50']:>6.2f}   {mine['p99']:>7.2f} "
                    f"{base['p99']:>7.2f} {mine['p99'] / base['p99']:>6.2f}   "
                    f"{int(mine['errors'])}   {load_avg:>4.1f}   {mine['cpu_ms']:>6.3f} "
                    f"{base['cpu_ms']:>6.3f} {cpu_ratios[-1]:>6.2f}   {same['rps']:>9.0f} "
                    f"{same['p50']:>6.2f} {same['cpu_ms']:>6.3f} {floor_cpu[-1]:>6.2f} "
                    f"{int(same['errors'])}")
            if args.runs > 1:
                notes.append(
                    f"{name}: {path} median over {args.runs} runs: req/s ratio "
                    f"{statistics.median(ratios):.2f} ({min(ratios):.2f} to {max(ratios):.2f}), "
                    f"CPU ratio {statistics.median(cpu_ratios):.2f} "
                    f"({min(cpu_ratios):.2f} to {max(cpu_ratios):.2f}), CPU a call over the "
                    f"floor's {statistics.median(floor_cpu):.2f} "
                    f"({min(floor_cpu):.2f} to {max(floor_cpu):.2f})")
    finally:
        for proc in (licore, bare, floor):
            proc.terminate()
            proc.wait(10)
    return notes + rows


def bench_workers(name: str, url: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    """Each worker count in turn: licore and the bare app, every call against both."""
    sample, note = loaded(name, url)
    lua = scripts(sample, args.paths, tmp)
    first: dict[tuple[str, str], float] = {}
    rows: list[str] = []
    for n in args.workers:
        lp, licore, bp, bare = servers(url, tmp, n)
        try:
            for path, script in lua.items():
                # Every worker warmed up: connections spread over the workers as they come.
                drive(lp, path, script, argparse.Namespace(duration=2, connections=8 * n))
                load_avg = os.getloadavg()[0]
                base = drive(bp, path, script, args, bare.pid)
                mine = drive(lp, path, script, args, licore.pid)
                first.setdefault((path, "licore"), mine["rps"])
                first.setdefault((path, "bare"), base["rps"])
                rows.append(
                    f"{name:<10} {path:<16} {n:>7} {mine['rps']:>9.0f} "
                    f"{mine['rps'] / first[(path, 'licore')]:>6.2f}   {base['rps']:>9.0f} "
                    f"{base['rps'] / first[(path, 'bare')]:>6.2f}   {mine['p50']:>6.2f} "
                    f"{mine['p99']:>7.2f}   {int(mine['errors']):>6}   {load_avg:>4.1f}   "
                    f"{mine['cpu_ms']:>6.3f} {base['cpu_ms']:>6.3f}")
        finally:
            for proc in (licore, bare):
                proc.terminate()
                proc.wait(30)
    return [note, *rows]


WORKERS_HEADER = (f"{'backend':<10} {'endpoint':<16} {'workers':>7} {'rps':>9} {'x':>6}   "
                  f"{'bare rps':>9} {'x':>6}   {'p50 ms':>6} {'p99 ms':>7}   errors   load   "
                  f"{'cpu ms':>6} {'bare':>6}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--paths", nargs="*", default=PATHS, choices=PATHS)
    parser.add_argument("--runs", type=int, default=1,
                        help="bare and licore measured in turn this many times per endpoint")
    parser.add_argument("--licenses", type=int, default=LICENSES)
    parser.add_argument("--workers", type=int, nargs="*",
                        help="compare these worker counts (ratios to the first) instead")
    args = parser.parse_args()
    globals()["LICENSES"] = args.licenses
    if shutil.which("wrk") is None:
        sys.exit("bench/runtime.py needs wrk: apt-get install wrk")
    run = bench_workers if args.workers else bench_backend
    header = WORKERS_HEADER if args.workers else (
        f"{'backend':<10} {'endpoint':<16} {'rps':>9} {'bare':>9} {'ratio':>6}   "
        f"{'p50 ms':>6} {'bare':>6} {'ratio':>6}   {'p99 ms':>7} {'bare':>7} "
        f"{'ratio':>6}   errors   load   {'cpu ms':>6} {'bare':>6} {'ratio':>6}   "
        f"{'floor rps':>9} {'p50 ms':>6} {'cpu ms':>6} {'x cpu':>6} errors")
    results: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.only in (None, "sqlite"):
            results += run("sqlite", f"sqlite:///{tmp / 'bench.db'}", args, tmp)
        if args.only in (None, "postgres"):
            schema = "bench_" + secrets.token_hex(4)
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            try:
                results += run("postgres", f"{PG}?options=-csearch_path%3D{schema}", args, tmp)
            finally:
                with psycopg.connect(PG, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print(f"wrk -t1 -c{args.connections} -d{args.duration}s; {os.cpu_count()} cores")
    notes = [r for r in results if ":" in r.split()[0]]
    for note in notes:
        print(note)
    print(header)
    for row in results:
        if row not in notes:
            print(row)


if __name__ == "__main__":
    main()
