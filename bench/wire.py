"""gzip on the wire against the plain answer, in the same run: the cached `/update` answer
(through the runtime's own `_send_json`) and the cached `GET /library/download` copy (through
`FileResponse`), for builds of 1 and 5 MiB (bench.download's model).

For each answer: the bytes on the wire, plain and gzip-encoded (what a caller sending
`Accept-Encoding: gzip` gets; Roblox's HttpService always sends it), and the server's time to
write the body into a sink, so no network is in the figure; the two take turns, best of
`--runs`. Then the decoding time (Python's `gzip`; HttpService decodes in native code) and,
computed from bytes and times, the whole answer at 10 and 100 Mbit/s. The gzip body is
checked to decode to the plain one.

Run from the repository root: `.venv/bin/python -m bench.wire [--mib 1 5] [--shape studio]
[--runs 3]`.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import secrets
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from adapters_http.responses import file_response
from adapters_http.runtime import _send_json
from bench import download
from bench.sdk import cpu_best
from licore import commands as c

GZIP_HEADERS = [(b"accept-encoding", b"gzip, deflate")]  # HttpService's, on every request
LINKS = (10, 100)  # Mbit/s, for the computed transfer times

T = TypeVar("T")
Writer = Callable[[Callable[[Any], Awaitable[None]], bool], Awaitable[None]]


@attrs.frozen
class Wire:
    label: str
    t_call: float  # the cached call itself, before its body is written
    plain: bytes
    zipped: bytes
    t_plain: float
    t_gzip: float
    t_decode: float


async def _body(write: Writer, gzipped: bool) -> tuple[float, bytes]:
    out: list[bytes] = []

    async def sink(message: Any) -> None:
        if message["type"] == "http.response.body":
            out.append(message["body"])

    start = time.process_time()
    await write(sink, gzipped)
    return time.process_time() - start, b"".join(out)


async def measure(label: str, t_call: float, write: Writer, runs: int) -> Wire:
    t_plain = t_gzip = float("inf")
    plain = zipped = b""
    for _ in range(runs):  # turns, so a change in the machine's load falls on both
        took, plain = await _body(write, False)
        t_plain = min(t_plain, took)
        took, zipped = await _body(write, True)
        t_gzip = min(t_gzip, took)
    assert gzip.decompress(zipped) == plain, label
    t_decode = cpu_best(lambda: gzip.decompress(zipped), runs)
    return Wire(label, t_call, plain, zipped, t_plain, t_gzip, t_decode)


async def answers(mib: float, runs: int) -> list[Wire]:
    download.TARGET_BYTES = int(mib * 2**20)
    data = download.build_model()
    with tempfile.TemporaryDirectory() as tmp:
        w = await download.published(data, Path(tmp) / "bench.db")
        async with w.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(w.product_id, w.buyer_platform_id)
            assert lic is not None and lic.key_ciphertext is not None
            key = w.vault.decrypt(lic.key_ciphertext, lic.id)
        def update() -> c.Update:
            return c.Update(c.NumberOrText(w.buyer_platform_id), w.product_id, key,
                            secrets.token_hex(16), nodes="compact")

        await w.uc.runtime.update(update(), "127.0.0.1")  # makes and keeps the nodes
        await w.uc.library.download(w.buyer, c.DownloadCopy(w.product_id))
        t_update = t_download = float("inf")
        for _ in range(runs):
            took, sealed = await _cpu(w.uc.runtime.update(update(), "127.0.0.1"))
            t_update = min(t_update, took)
            took, got = await _cpu(w.uc.library.download(w.buyer, c.DownloadCopy(w.product_id)))
            t_download = min(t_download, took)
        await w.storage.close()
    assert sealed is not None
    body = {"ok": True, "version": "1", "update": True, "cipher": sealed.sealed.cipher,
            "tag": sealed.sealed.tag}

    async def update_answer(sink: Callable[[Any], Awaitable[None]], gzipped: bool) -> None:
        await _send_json(sink, body, scope={"headers": GZIP_HEADERS if gzipped else []})

    async def download_answer(sink: Callable[[Any], Awaitable[None]], gzipped: bool) -> None:
        scope = {"type": "http", "method": "GET", "headers": GZIP_HEADERS if gzipped else []}
        await file_response(got)(scope, _no_body, sink)

    size = f"{len(data) / 2**20:.0f} MiB build"
    return [await measure(f"/update, {size}", t_update, update_answer, runs),
            await measure(f"download ({got.format}), {size}", t_download, download_answer,
                          runs)]


async def _cpu(call: Awaitable[T]) -> tuple[float, T]:
    start = time.process_time()
    got = await call
    return time.process_time() - start, got


async def _no_body() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def _at(n: int, mbit: int) -> float:
    return n * 8 / (mbit * 1e6)


def report(rows: list[Wire]) -> None:
    print(f"{'answer':<32}{'plain MiB':>10}{'gzip MiB':>9}{'bytes':>7}{'call':>8}"
          f"{'+ plain':>9}{'+ gzip':>9}{'time':>7}{'decode':>8}")
    for r in rows:
        p, z = len(r.plain), len(r.zipped)
        ratio = (r.t_call + r.t_gzip) / (r.t_call + r.t_plain)
        print(f"{r.label:<32}{p / 2**20:>10.2f}{z / 2**20:>9.2f}{z / p:>7.2f}"
              f"{r.t_call:>7.3f}s{r.t_plain:>8.3f}s{r.t_gzip:>8.3f}s{ratio:>6.2f}x"
              f"{r.t_decode:>7.3f}s")
    print("(bytes: gzip / plain; call: the cached call's CPU time, + its body written plain or "
          "gzip; time: call + gzip / call + plain)")
    print("whole answer, computed: writing + sending (+ decoding for gzip), plain / gzip")
    for r in rows:
        p, z = len(r.plain), len(r.zipped)
        links = [(m, _at(p, m) + r.t_plain, _at(z, m) + r.t_gzip + r.t_decode) for m in LINKS]
        print(f"  {r.label:<30}" + "".join(
            f"  {m} Mbit/s {a:.2f} / {b:.2f} s ({b / a:.2f}x)" for m, a, b in links))


async def main() -> None:
    parser = argparse.ArgumentParser()
    download.model_args(parser)
    parser.set_defaults(mib=[1.0, 5.0])
    parser.add_argument("--runs", type=int, default=3, help="best of this many, per answer")
    args = parser.parse_args()
    download.SHAPE = args.shape
    print(f"{download.SHAPE} parts; load average at start {os.getloadavg()[0]:.1f}")
    rows = [row for mib in args.mib for row in await answers(mib, args.runs)]
    report(rows)
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
