"""A game server taking in a 5 MiB update, in the Luau VM with native hashing (the
EncodingService stand-in of tests/sdk/encoding_service.py, whose hashes and zstd run in the
host), the specification's sealed answer against updates as files (compact nodes, zstd where
the engine decompresses natively), in the same run; and the bytes each puts on the wire.

The answers come from a real `licore serve` (runtime only, SQLite), fetched once; then the
SDK's `update` is timed on them, its HTTP replaced by the captured answers so no network is in
the figure: verifying, decrypting (and decompressing), and decoding the nodes' JSON with the
SDK's own decoder (Roblox's HttpService:JSONDecode is native; the decoding alone is printed
too, so the rest can be read apart). CPU time of this process, best of `--runs`.

Run from the repository root: `.venv/bin/python -m bench.take_in [--mib 5] [--runs 2]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from tests.sdk import encoding_service
from tests.sdk.luau_sdk import LuauSdk, method
from tests.support.fakes import TEST_KEK

from adapters_http.compression import SEALED
from bench import download
from bench.runtime import BIN, free_port, start
from bench.update_files import _setup
from licore.sealing import open_sealed


def _captured(base: str, who: tuple[str, str, str], **extra: str) -> tuple[str, bytes, str]:
    nonce = secrets.token_hex(16)
    body = {"user_id": who[0], "product_id": who[1], "key": who[2], "nonce": nonce,
            "nodes": "compact", **extra}
    r = httpx.post(f"{base}/runtime/update", json=body, timeout=300)
    assert r.status_code == 200, r.text
    file = b""
    if "file" in r.json():
        file = httpx.get(base + r.json()["file"]["url"], timeout=300).content
    return r.text, file, nonce


def _client(sdk: LuauSdk, who: tuple[str, str, str], answer: str, file: bytes,
            nonce: str, files: bool) -> Any:
    def post(_lua: Any, _args: tuple[Any, ...]) -> tuple[bool, int, Any]:
        return True, 200, sdk.bytes_in(answer.encode())

    def get(_lua: Any, _args: tuple[Any, ...]) -> tuple[bool, int, Any]:
        return True, 200, sdk.bytes_in(file)

    config = sdk.lua.create_table()
    for k, v in (("runtimeUrl", "http://licore.test/runtime"), ("productId", who[1]),
                 ("licenseKey", who[2]), ("userId", who[0]), ("fileUpdates", files),
                 ("compactNodes", True), ("http", sdk.lua.create_function(post)),
                 ("httpGet", sdk.lua.create_function(get)),
                 ("newNonce", sdk.lua.create_function(lambda *_: (nonce,))),
                 ("jsonEncode", sdk.module.get("jsonEncode")),
                 ("jsonDecode", sdk.module.get("jsonDecode")),
                 ("maxPerMinute", 1_000_000)):
        config.set(k, v)
    return sdk.call("new", config)[0]


def _cpu(fn: Any, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
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
               "LICORE_RUNTIME_KEY_RATE_LIMIT": "1000000000"}
        proc = start([str(BIN / "licore"), "serve", "--port", str(port), "--only", "runtime"],
                     env, port, Path(tmp))
        try:
            base = f"http://127.0.0.1:{port}"
            spec = _captured(base, who)
            packed = _captured(base, who, delivery="file", compression="zstd")
        finally:
            proc.terminate()
            proc.wait(30)
    sdk = LuauSdk(before=encoding_service.install)
    assert sdk.module.get("nativeHashing") is True
    # On the wire: the sealed answer gzip-encoded (as the server sends it to HttpService),
    # against the small sealed answer plus the file (encrypted: sent as it is).
    zipper = SEALED.compressor()
    spec_wire = len(zipper.compress(spec[0].encode()) + zipper.flush())
    file_wire = len(packed[0]) + len(packed[1])
    print(f"{size / 2**20:.2f} MiB build ({download.SHAPE}); load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"on the wire: sealed {spec_wire / size:.2f}x the build (gzip), "
          f"file {file_wire / size:.2f}x (zstd inside, then encrypted)")
    got: dict[str, float] = {}
    for name, (answer, file, nonce), files in (("sealed", spec, False),
                                               ("file", packed, True)):
        def take_in(a: str = answer, f: bytes = file, n: str = nonce,
                    fl: bool = files) -> None:
            _nodes, reason = method(_client(sdk, who, a, f, n, fl), "update", None, buyer)
            assert reason is None, reason
        got[name] = _cpu(take_in, args.runs)
    sealed_answer = json.loads(spec[0])
    nodes_text = json.dumps(json.loads(open_sealed(
        key, spec[2], sealed_answer["cipher"], sealed_answer["tag"]))["instances"],
        separators=(",", ":")).encode()
    decode = _cpu(lambda: sdk.call("jsonDecode", nodes_text), 1)
    print(f"take-in, native hashing: sealed {got['sealed']:.2f} s, file {got['file']:.2f} s "
          f"(file / sealed {got['file'] / got['sealed']:.2f}); of each, decoding the nodes' "
          f"JSON with the SDK's Luau decoder {decode:.2f} s ({len(nodes_text) / 2**20:.1f} MiB)")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
