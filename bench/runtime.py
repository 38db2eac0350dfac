"""Runtime API throughput and latency against a bare Starlette app, in the same run.

    .venv/bin/python bench/runtime.py [--duration 10] [--connections 32] [--only sqlite]
        [--paths /runtime/unlock ...] [--runs 3]

Loads 100,000 licenses across 100 products, starts `licore serve` (one Hypercorn worker) and
the bare app under the same Hypercorn settings, drives each with wrk (Debian's `wrk`; one
thread, so the server keeps the other core) and prints requests per second and p50/p99
latency for /check, /unlock and /version as ratios to the bare app, for SQLite and PostgreSQL,
with the one-minute load average when each measurement began, and the server processes' CPU
time per request (bare's over licore's: the throughput ratio each would have with a core to
itself, which moves less than req/s on a shared machine). With `--runs N` the bare app and
licore are measured in turn N times per endpoint and the median ratios are printed too.
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
PRODUCTS, LICENSES, SAMPLE = 100, 100_000, 2000
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
    per_product = LICENSES // PRODUCTS
    for start in range(0, LICENSES, 10_000):
        async with deps.storage.unit_of_work() as uow:
            for n in range(start, min(start + 10_000, LICENSES)):
                product = products[n // per_product]
                key = make_license_key(secrets.token_bytes(48))
                lic = License(deps.new_id("lic"), product.id, str(10_000 + n), Source.GRANT,
                              LicenseState.ACTIVE, now, now)
                lic = License(lic.id, lic.product_id, lic.platform_id, lic.source, lic.state,
                              now, now, deps.vault.encrypt(key, lic.id),
                              deps.vault.lookup_digest(key), 1)
                await uow.licenses.add(lic)
                if n % (LICENSES // SAMPLE) == 0:
                    sample.append((lic.platform_id, product.id, key))
    await deps.storage.close()
    return sample


def start(argv: list[str], env: dict[str, str], port: int, cwd: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.post(f"http://127.0.0.1:{port}/runtime/check", json={}, timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.2)
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


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of the server's processes so far. On a loaded machine the
    server gets less than a core, so its requests a second fall, but the CPU time a request
    costs moves much less: the steadier ratio to the bare app."""
    ticks = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def drive(port: int, path: str, script: Path, args: argparse.Namespace,
          pid: int = 0) -> dict[str, float]:
    cpu = cpu_seconds(pid) if pid else 0.0
    out = subprocess.run(
        ["wrk", "-t1", f"-c{args.connections}", f"-d{args.duration}s", "-s", str(script),
         f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    r = json.loads(line[7:])
    cpu = cpu_seconds(pid) - cpu if pid else 0.0
    return {"rps": r["requests"] / (r["duration_us"] / 1e6), "p50": r["p50"] / 1000,
            "p99": r["p99"] / 1000, "errors": r["errors"] + r["non2xx"],
            "cpu_ms": 1000 * cpu / max(1, r["requests"])}


def bench_backend(name: str, url: str, args: argparse.Namespace, tmp: Path) -> list[str]:
    t0 = time.perf_counter()
    sample = asyncio.run(load(url))
    loaded = time.perf_counter() - t0
    env = {**os.environ, "LICORE_DATABASE_URL": url, "LICORE_KEK": KEK.hex(),
           "LICORE_DATA_DIR": str(tmp), "LICORE_RUNTIME_KEY_RATE_LIMIT": "1000000000",
           "LICORE_RUNTIME_IP_RATE_LIMIT": "1000000000"}
    lp, bp = free_port(), free_port()
    licore = start([str(BIN / "licore"), "serve", "--port", str(lp), "--only", "runtime"],
                   env, lp, tmp)
    bare = start([str(BIN / "hypercorn"), "--bind", f"127.0.0.1:{bp}", "bare_app:app"],
                 {**os.environ, "PYTHONPATH": str(ROOT / "bench")}, bp, tmp)
    notes = [f"{name}: loaded {LICENSES:,} licenses across {PRODUCTS} products in "
             f"{loaded:.1f} s"]
    rows: list[str] = []
    try:
        entries = ",".join(f'{{"{u}","{p}","{k}"}}' for u, p, k in sample)
        for path in args.paths:
            script = tmp / f"{path.rsplit('/', 1)[1]}.lua"
            script.write_text(LUA % {"entries": entries, "path": path})
            drive(lp, path, script, argparse.Namespace(duration=2, connections=8))  # warm up
            ratios: list[float] = []
            cpu_ratios: list[float] = []
            for _ in range(args.runs):
                load_avg = os.getloadavg()[0]
                base = drive(bp, path, script, args, bare.pid)
                mine = drive(lp, path, script, args, licore.pid)
                ratios.append(mine["rps"] / base["rps"])
                cpu_ratios.append(base["cpu_ms"] / mine["cpu_ms"])
                rows.append(
                    f"{name:<10} {path:<16} {mine['rps']:>9.0f} {base['rps']:>9.0f} "
                    f"{ratios[-1]:>6.2f}   {mine['p50']:>6.2f} {base['p50']:>6.2f} "
                    f"{mine['p50'] / base['p50']:>6.2f}   {mine['p99']:>7.2f} "
                    f"{base['p99']:>7.2f} {mine['p99'] / base['p99']:>6.2f}   "
                    f"{int(mine['errors'])}   {load_avg:>4.1f}   {mine['cpu_ms']:>6.3f} "
                    f"{base['cpu_ms']:>6.3f} {cpu_ratios[-1]:>6.2f}")
            if args.runs > 1:
                notes.append(
                    f"{name}: {path} median over {args.runs} runs: req/s ratio "
                    f"{statistics.median(ratios):.2f} ({min(ratios):.2f} to {max(ratios):.2f}), "
                    f"CPU ratio {statistics.median(cpu_ratios):.2f} "
                    f"({min(cpu_ratios):.2f} to {max(cpu_ratios):.2f})")
    finally:
        for proc in (licore, bare):
            proc.terminate()
            proc.wait(10)
    return notes + rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--paths", nargs="*", default=PATHS, choices=PATHS)
    parser.add_argument("--runs", type=int, default=1,
                        help="bare and licore measured in turn this many times per endpoint")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("bench/runtime.py needs wrk: apt-get install wrk")
    header = (f"{'backend':<10} {'endpoint':<16} {'rps':>9} {'bare':>9} {'ratio':>6}   "
              f"{'p50 ms':>6} {'bare':>6} {'ratio':>6}   {'p99 ms':>7} {'bare':>7} "
              f"{'ratio':>6}   errors   load   {'cpu ms':>6} {'bare':>6} {'ratio':>6}")
    results: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.only in (None, "sqlite"):
            results += bench_backend("sqlite", f"sqlite:///{tmp / 'bench.db'}", args, tmp)
        if args.only in (None, "postgres"):
            schema = "bench_" + secrets.token_hex(4)
            with psycopg.connect(PG, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            try:
                results += bench_backend(
                    "postgres", f"{PG}?options=-csearch_path%3D{schema}", args, tmp)
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
