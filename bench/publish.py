"""What a publish costs: every buyer's first `/update` of the new version, against one
version build plus the same buyers' cached calls, in one run, in CPU time.

A Studio-shaped build (bench.download's `studio` parts, 200 ModuleScripts, 199 under a
`minify` rule) is published on a fresh SQLite file and granted to `--buyers` buyers. Then,
in-process through the use case (as `bench.update`), with the server's single flight and
`--concurrency` calls in flight at a time:

1. the storm: every buyer's first `/update` after the publish (the first of them makes the
   version's node template; the others wait for it and splice);
2. the same buyers' second calls (cached: kept nodes decrypted and sealed);
3. the version build alone: making the template once (what step 1 shares);
4. one at a time, for `--sample` more buyers: a cold call (template made) and a cached call,
   and a cold call the way every buyer paid before templates (the copy made, read whole
   into nodes, sealed; every script protected for the buyer).

Ratios: the storm's CPU over (version build + the cached calls' CPU), and a cold call over
a cached one. Run from the repository root:
`.venv/bin/python -m bench.publish [--mib 5 20] [--buyers 100] [--form compact|tagged]`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs

from bench import download
from licore import commands as c
from licore.actors import ActingStudio
from licore.builds.nodes import nodes_json
from licore.builds.prepare import SameForEveryone
from licore.builds.template import make_template
from licore.licenses import LicenseEvent
from licore.sealing import seal
from licore_cli.single_flight import AsyncSingleFlight


@attrs.frozen
class Buyer:
    platform_id: str
    key: str


async def _cpu(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Process CPU seconds (every thread) and wall seconds of `work`."""
    cpu, wall = time.process_time(), time.perf_counter()
    await work()
    return time.process_time() - cpu, time.perf_counter() - wall


async def _call_cpu(call: Callable[[Buyer], Awaitable[None]], buyer: Buyer) -> float:
    return (await _cpu(lambda: call(buyer)))[0]


async def _buyers(w: download.World, count: int) -> list[Buyer]:
    async with w.storage.unit_of_work() as uow:
        product = await uow.products.by_id(w.product_id)
    assert product is not None
    studio = ActingStudio(product.studio_id)
    made = []
    for i in range(count):
        platform_id = str(9_000_000 + i)
        await w.uc.lifecycle.change(studio, c.ChangeLicense(
            c.LicenseTarget(w.product_id, platform_id), LicenseEvent.GRANT))
        async with w.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(w.product_id, platform_id)
        assert lic is not None and lic.key_ciphertext is not None
        made.append(Buyer(platform_id, w.vault.decrypt(lic.key_ciphertext, lic.id)))
    return made


async def one(mib: float, buyers: int, sample: int, form: str, concurrency: int) -> None:
    download.TARGET_BYTES = int(mib * 2**20)
    data = download.build_model()
    compact = form == "compact"
    print(f"{len(data) / 2**20:.2f} MiB {download.SHAPE} build, "
          f"{download.instances(data):,} instances, {form} nodes, {buyers} buyers, "
          f"{concurrency} calls at a time; load average at start {os.getloadavg()[0]:.1f}",
          flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        w = await download.published(
            data, Path(tmp) / "bench.db",
            lambda deps: attrs.evolve(deps, once=AsyncSingleFlight()))
        granted = await _buyers(w, buyers + sample)
        storm, alone = granted[:buyers], granted[buyers:]
        gate = asyncio.Semaphore(concurrency)

        async def call(buyer: Buyer) -> None:
            async with gate:
                answer = await w.uc.runtime.update(c.Update(
                    c.NumberOrText(buyer.platform_id), w.product_id, buyer.key,
                    secrets.token_hex(16), nodes=form), "127.0.0.1")
                assert answer is not None and answer.update

        async def everyone() -> None:
            await asyncio.gather(*(call(b) for b in storm))

        storm_cpu, storm_wall = await _cpu(everyone)
        print(f"  storm: {buyers} first calls {storm_cpu:.1f} s CPU ({storm_wall:.1f} s wall), "
              f"{storm_cpu / buyers:.2f} s a buyer", flush=True)
        cached_cpu, cached_wall = await _cpu(everyone)
        codec = w.uc.runtime.models
        digest = hashlib.sha256(data).hexdigest()

        async def build() -> None:
            make_template(codec, data, compact, digest).to_bytes()

        build_cpu, _ = await _cpu(build)
        cold = [await _call_cpu(call, b) for b in alone]
        cached = [await _call_cpu(call, b) for b in alone]
        before = await _whole_copy_cold(w, alone[0], compact)
        await w.storage.close()
    floor = build_cpu + cached_cpu
    print(f"  one version build (the template) {build_cpu:.2f} s CPU; {buyers} cached calls "
          f"{cached_cpu:.1f} s CPU ({cached_wall:.1f} s wall), {cached_cpu / buyers:.2f} s each")
    print(f"  storm / (version build + {buyers} cached calls): {storm_cpu:.1f} / {floor:.1f} "
          f"= {storm_cpu / floor:.2f}x")
    cold_m, cached_m = statistics.median(cold), statistics.median(cached)
    print(f"  one buyer at a time (median of {sample}): cold {cold_m:.2f} s CPU, cached "
          f"{cached_m:.2f} s: cold / cached {cold_m / cached_m:.2f}x")
    print(f"  before templates, a cold call: {before:.2f} s CPU ({before / cached_m:.1f}x "
          f"cached); {buyers} buyers would have cost {before * buyers:.0f} s "
          f"({before * buyers / storm_cpu:.1f}x the storm); "
          f"load average at end {os.getloadavg()[0]:.1f}")


async def _whole_copy_cold(w: download.World, buyer: Buyer, compact: bool) -> float:
    """A cold `/update` as every buyer paid before templates: the copy made and stored,
    read whole into nodes, sealed (the nodes' encryption and storing left out: small)."""
    async with w.storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(w.product_id, buyer.platform_id)
        product = await uow.products.by_id(w.product_id)
        await uow.copies.drop(license_id=lic.id if lic else "")
    assert lic is not None and product is not None and product.current_version_id
    async with w.storage.unit_of_work() as uow:
        version = await uow.versions.by_id(product.current_version_id)
    assert version is not None
    codec = w.uc.runtime.models
    # Every script protected for this buyer, as before any was reused across buyers.
    copies = attrs.evolve(w.uc.copies, same=SameForEveryone())

    async def whole() -> None:
        copy = await copies.prepared(lic, product, version, buyer.key)
        seal(buyer.key, secrets.token_hex(16), nodes_json(codec.read(copy), compact))

    return (await _cpu(whole))[0]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=float, nargs="*", default=[5.0, 20.0])
    parser.add_argument("--buyers", type=int, default=100)
    parser.add_argument("--sample", type=int, default=3)
    parser.add_argument("--form", choices=("compact", "tagged"), default="compact")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    download.SHAPE = "studio"
    for mib in args.mib:
        await one(mib, args.buyers, args.sample, args.form, args.concurrency)


if __name__ == "__main__":
    asyncio.run(main())
