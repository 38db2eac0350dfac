"""`/update` of the 5 MiB download benchmark model: cold (prepare the copy, make and keep the
nodes, seal) and cached (seal the kept nodes), in-process through the use case, with the
sealed plaintext's size as a ratio to the build's, and each time as a ratio to sealing a
plaintext of the same size (the same-run floor: what every call must do at least).

Then the answer on the wire: the bytes and the time to write the HTTP body (the runtime's
own `_send_json`, into a sink, so no network in the figure) as plain JSON and gzip-encoded
(what a caller sending `Accept-Encoding: gzip` gets, as Roblox's HttpService always does),
with the time to decode it again (HttpService's side).

Run from the repository root: `.venv/bin/python -m bench.update [--mib N ...] [--shape studio]`
(the shapes are bench.download's).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

from adapters_http.runtime import _send_json
from bench import download
from bench.timing import best
from licore import commands as c
from licore.sealing import Sealed, open_sealed, seal


async def one(mib: float) -> None:
    download.TARGET_BYTES = int(mib * 2**20)
    data = download.build_model()
    print(f"{download.SHAPE} parts, {download.instances(data):,} instances; "
          f"load average at start {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        w = await download.published(data, Path(tmp) / "bench.db")
        async with w.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(w.product_id, w.buyer_platform_id)
            assert lic is not None and lic.key_ciphertext is not None
            lic_key = w.vault.decrypt(lic.key_ciphertext, lic.id)

        async def call(form: str = "compact") -> tuple[float, Sealed, str]:
            nonce = secrets.token_hex(16)
            command = c.Update(c.NumberOrText(w.buyer_platform_id), w.product_id, lic_key,
                               nonce, nodes=form)
            start = time.perf_counter()
            answer = await w.uc.runtime.update(command, "127.0.0.1")
            assert answer is not None
            return time.perf_counter() - start, answer.sealed, nonce

        async def drop() -> None:
            async with w.storage.unit_of_work() as uow:
                await uow.copies.drop(product_id=w.product_id)

        await drop()
        t_cold, answer, nonce = await call()
        plain = open_sealed(lic_key, nonce, answer.cipher, answer.tag)
        assert json.loads(plain)["nonce"] == nonce
        t_cached = min([(await call())[0] for _ in range(3)])
        t_tagged, tagged_answer, _ = await call("tagged")
        await w.storage.close()
    floor = best(lambda: seal(lic_key, nonce, plain), 3)
    tagged_len = len(tagged_answer.cipher) // 2
    print(f"{len(data) / 2**20:.2f} MiB build: plaintext compact {len(plain) / len(data):.2f}x "
          f"the build ({len(plain) / 2**20:.1f} MiB), tagged {tagged_len / len(data):.2f}x; "
          f"seal alone {floor:.3f} s")
    print(f"  /update cold {t_cold:.3f} s ({t_cold / floor:.1f}x seal), "
          f"cached {t_cached:.3f} s ({t_cached / floor:.2f}x seal), "
          f"tagged, first call (made and kept) {t_tagged:.3f} s; "
          f"load average at end {os.getloadavg()[0]:.1f}")
    await wire(answer, t_cached)


async def wire(answer: Sealed, t_cached: float) -> None:
    body = {"ok": True, "version": "2.0.0", "update": True, "cipher": answer.cipher,
            "tag": answer.tag}
    plaintext = len(answer.cipher) // 2
    gzip_scope: dict[str, Any] = {"headers": [(b"accept-encoding", b"gzip, deflate")]}
    got: dict[str, list[bytes]] = {}

    async def written(scope: dict[str, Any] | None) -> float:
        out: list[bytes] = []

        async def sink(message: Any) -> None:
            if message["type"] == "http.response.body":
                out.append(message["body"])

        start = time.perf_counter()
        await _send_json(sink, body, scope=scope)
        took = time.perf_counter() - start
        got["gzip" if scope else "plain"] = out
        return took

    t_plain = min([await written(None) for _ in range(3)])
    t_gzip = min([await written(gzip_scope) for _ in range(3)])
    plain_bytes = sum(map(len, got["plain"]))
    zipped = b"".join(got["gzip"])
    t_decode = best(lambda: gzip.decompress(zipped), 3)
    assert gzip.decompress(zipped) == b"".join(got["plain"])
    print(f"  on the wire: plaintext {plaintext / 2**20:.2f} MiB; plain answer "
          f"{plain_bytes / 2**20:.2f} MiB ({plain_bytes / plaintext:.2f}x the plaintext), "
          f"gzip {len(zipped) / 2**20:.2f} MiB ({len(zipped) / plaintext:.2f}x the plaintext, "
          f"{len(zipped) / plain_bytes:.2f}x the plain answer)")
    print(f"  writing the body: plain {t_plain:.3f} s, gzip {t_gzip:.3f} s "
          f"({t_gzip / t_plain:.1f}x plain, +{t_gzip - t_plain:.3f} s); "
          f"decoding the gzip {t_decode:.3f} s")
    whole_plain, whole_gzip = t_cached + t_plain, t_cached + t_gzip
    print(f"  cached /update and its body: plain {whole_plain:.3f} s, gzip {whole_gzip:.3f} s "
          f"({whole_gzip / whole_plain:.2f}x plain)")
    for mbit in (10, 100):
        def at(n: int, mbit: int = mbit) -> float:
            return n * 8 / (mbit * 1e6)
        print(f"  at {mbit} Mbit/s (computed): plain {at(plain_bytes) + t_plain:.2f} s, "
              f"gzip {at(len(zipped)) + t_gzip + t_decode:.2f} s to send and decode")


async def main() -> None:
    parser = argparse.ArgumentParser()
    download.model_args(parser)
    args = parser.parse_args()
    download.SHAPE = args.shape
    for mib in args.mib:
        await one(mib)


if __name__ == "__main__":
    asyncio.run(main())
