"""A release's `/update` calls against a real `licore serve` (runtime only, SQLite): the
specification's sealed answer against updates as files (docs/runtime.md, "Updates as
files"), for one buyer's game servers all asking for the same new build, in the same run.

Each round, for each way in turn (the two take turns, rounds interleaved): the buyer's kept
copy is dropped (as a release finds it: nothing made yet), then `--calls` game servers each
fetch the update: the specification's `/update` (sealed nodes, gzip-encoded as HttpService
asks) or `/update` with `"delivery": "file"` plus `GET` of the file. The figure is the
server's CPU time (user + system of its processes, from /proc) for all the calls (and the
first apart from the later ones), and the bytes on the wire; the first call of each way
makes the copy and its nodes (and the file).
The file is checked to open to the same instances once.

Run from the repository root: `.venv/bin/python -m bench.update_files [--mib 5]
[--calls 50] [--rounds 2] [--shape plain|studio]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

import httpx
from tests.support.fakes import TEST_KEK

from bench import download
from bench.runtime import BIN, cpu_seconds, free_port, start
from licore.sealing import open_sealed
from licore.update_files import keystream_xor

GZIP = {"Accept-Encoding": "gzip, deflate"}  # HttpService's, on every request


def _body(buyer: str, product: str, key: str, **extra: str) -> tuple[dict[str, Any], str]:
    nonce = secrets.token_hex(16)
    return {"user_id": buyer, "product_id": product, "key": key, "nonce": nonce,
            "nodes": "compact", **extra}, nonce


def spec_calls(client: httpx.Client, base: str, who: tuple[str, str, str],
               calls: int) -> int:
    wire = 0
    for _ in range(calls):
        body, _ = _body(*who)
        with client.stream("POST", f"{base}/runtime/update", json=body, headers=GZIP) as r:
            wire += sum(len(piece) for piece in r.iter_raw())
            assert r.status_code == 200
    return wire


def file_calls(client: httpx.Client, base: str, who: tuple[str, str, str],
               calls: int) -> int:
    wire = 0
    for _ in range(calls):
        body, _ = _body(*who, delivery="file")
        r = client.post(f"{base}/runtime/update", json=body, headers=GZIP)
        assert r.status_code == 200 and "file" in r.json(), r.text
        wire += len(r.content)
        with client.stream("GET", base + r.json()["file"]["url"], headers=GZIP) as f:
            wire += sum(len(piece) for piece in f.iter_raw())
            assert f.status_code == 200
    return wire


def same_instances(client: httpx.Client, base: str, who: tuple[str, str, str]) -> None:
    key = who[2]
    body, nonce = _body(*who)
    spec = client.post(f"{base}/runtime/update", json=body).json()
    instances = json.loads(open_sealed(key, nonce, spec["cipher"], spec["tag"]))["instances"]
    body, nonce = _body(*who, delivery="file")
    got = client.post(f"{base}/runtime/update", json=body).json()
    sealed = json.loads(open_sealed(key, nonce, got["cipher"], got["tag"]))
    data = client.get(base + got["file"]["url"]).content
    assert json.loads(keystream_xor(bytes.fromhex(sealed["file"]["key"]), data)) == instances


async def _drop(db: Path, product: str) -> None:
    from adapters_storage import open_storage
    storage = open_storage(f"sqlite:///{db}")
    async with storage.unit_of_work() as uow:
        await uow.copies.drop(product_id=product)
    await storage.close()


async def _setup(db: Path) -> tuple[str, str, str, int]:
    data = download.build_model()
    w = await download.published(data, db)
    async with w.storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(w.product_id, w.buyer_platform_id)
        assert lic is not None and lic.key_ciphertext is not None
        key = w.vault.decrypt(lic.key_ciphertext, lic.id)
    await w.storage.close()
    return w.buyer_platform_id, w.product_id, key, len(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    download.model_args(parser)
    args = parser.parse_args()
    download.SHAPE = args.shape
    download.TARGET_BYTES = int(args.mib[0] * 2**20)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        buyer, product, key, size = asyncio.run(_setup(db))
        who = (buyer, product, key)
        port = free_port()
        env = {**os.environ, "LICORE_DATABASE_URL": f"sqlite:///{db}",
               "LICORE_KEK": TEST_KEK.hex(), "LICORE_DATA_DIR": tmp,
               "LICORE_PROTECT_PROCESSES": "0",
               "LICORE_RUNTIME_KEY_RATE_LIMIT": "1000000000",
               "LICORE_RUNTIME_IP_RATE_LIMIT": "1000000000"}
        proc = start([str(BIN / "licore"), "serve", "--port", str(port), "--only", "runtime"],
                     env, port, Path(tmp))
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(timeout=300) as client:
                same_instances(client, base, who)
                print(f"{size / 2**20:.2f} MiB build ({download.SHAPE}), {args.calls} calls "
                      f"a way; load average at start {os.getloadavg()[0]:.1f}")
                for n in range(args.rounds):
                    got = {}
                    for name, way in (("spec", spec_calls), ("file", file_calls)):
                        asyncio.run(_drop(db, product))
                        cpu = cpu_seconds(proc.pid)
                        wire = way(client, base, who, 1)
                        first = cpu_seconds(proc.pid) - cpu
                        wire += way(client, base, who, args.calls - 1)
                        got[name] = (cpu_seconds(proc.pid) - cpu, wire)
                        later = (got[name][0] - first) / max(1, args.calls - 1)
                        print(f"  {name}: the first call {first:.2f} s CPU (makes the copy), "
                              f"each later one {later:.3f} s")
                    (s_cpu, s_wire), (f_cpu, f_wire) = got["spec"], got["file"]
                    s_x, f_x = s_wire / args.calls / size, f_wire / args.calls / size
                    print(f"round {n + 1}: spec {s_cpu:.2f} s CPU, {s_x:.2f}x the build a call "
                          f"on the wire; file {f_cpu:.2f} s CPU, {f_x:.2f}x; "
                          f"file / spec CPU {f_cpu / s_cpu:.3f}")
                print(f"load average at end {os.getloadavg()[0]:.1f}")
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
