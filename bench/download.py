"""Cold and cached `GET /library/download` of a 5 MiB model with 200 scripts, as ratios to
reading and writing the same file with no changes (the baseline, measured in the same run).

Run from the repository root: `.venv/bin/python -m bench.download [--mib 1 5 20]
[--shape studio] [--runs 3] [--skip-heap]`. It drives the download
use case in-process on a fresh SQLite file (HTTP adds the same small cost to every case).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import random
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
from tests.support.fakes import make_deps
from tests.support.models import LICENSE_SCRIPT, script
from tests.support.scenario import build_world

from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from bench.timing import best, best_async
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.builds.tree import Instance, Model, Prop
from licore.licenses import LicenseEvent
from licore.ports import KeyVault
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from licore_cli.memory import return_large_buffers

TARGET_BYTES = 5 * 1024 * 1024
SCRIPTS = 200
# "plain": parts of six properties, about 31 bytes each in the file (34,000 a MiB, so 20 MiB
# would pass the 500,000 instances an upload may hold). "studio": parts as Studio saves
# them, every BasePart property written, most at the class default, turned at random angles
# and of several materials: about 2.5 times the bytes a part, so 20 MiB fits.
SHAPE = "plain"
SHAPES = ("plain", "studio")
MATERIALS = (256, 272, 288, 512, 528, 784, 816, 832, 848, 1040)  # Plastic, SmoothPlastic, ...


def _source(rng: random.Random, i: int) -> str:
    lines = [f"-- module {i}: generated for the download benchmark"]
    for j in range(120):
        lines.append(f"local v{j} = {rng.randint(0, 10**6)} -- note {rng.random():.6f}")
    lines.append(f"return {{ id = {i} }}")
    return "\n".join(lines) + "\n"


def _rotation(rng: random.Random) -> tuple[float, ...]:
    """A random rotation matrix, row by row, from a random unit quaternion."""
    w, x, y, z = (rng.gauss(0, 1) for _ in range(4))
    n = math.sqrt(w * w + x * x + y * y + z * z) or 1.0
    w, x, y, z = w / n, x / n, y / n, z / n
    return (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
            2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
            2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))


def _part(rng: random.Random, n: int) -> dict[str, Prop]:
    position = (rng.uniform(-500, 500), rng.uniform(0, 100), rng.uniform(-500, 500))
    props = {
        "Name": Prop("String", f"Part{n}".encode()),
        "size": Prop("Vector3", (rng.uniform(1, 9), rng.uniform(1, 9), rng.uniform(1, 9))),
        "Color3uint8": Prop("Color3uint8", (rng.randrange(256), rng.randrange(256),
                                           rng.randrange(256))),
        "Anchored": Prop("Bool", True),
        "Transparency": Prop("Float32", 0.0),
    }
    if SHAPE == "plain":
        return {**props, "CFrame": Prop("CFrame", (*position, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0,
                                                   0.0, 0.0, 1.0))}
    return {**props, "CFrame": Prop("CFrame", (*position, *_rotation(rng))),
            "Material": Prop("Enum", rng.choice(MATERIALS)),
            "TopSurface": Prop("Enum", 0), "BottomSurface": Prop("Enum", 0),
            "CanCollide": Prop("Bool", True), "CanTouch": Prop("Bool", True),
            "CanQuery": Prop("Bool", True), "CastShadow": Prop("Bool", True),
            "Locked": Prop("Bool", False), "Massless": Prop("Bool", False),
            "Reflectance": Prop("Float32", 0.0)}


def build_model() -> bytes:
    """200 scripts (one with the placeholder) and enough parts of `SHAPE` to reach
    `TARGET_BYTES` on disk."""
    rng = random.Random(7)
    codec = RobloxModelCodec()
    scripts = [script("LicenseCheck", LICENSE_SCRIPT, "ModuleScript")]
    scripts += [script(f"Module{i}", _source(rng, i), "ModuleScript") for i in range(1, SCRIPTS)]
    parts: list[Instance] = []
    root = Instance("Folder", "root", {"Name": Prop("String", b"Bench")}, scripts)
    model = Model("binary", [root])

    def add_parts(count: int) -> None:
        for _ in range(count):
            n = len(parts)
            parts.append(Instance("Part", f"p{n}", _part(rng, n)))

    # Size a sample, then add what the rest of the 5 MiB needs; top up if short.
    add_parts(2000)
    root.children = scripts + parts
    sample = len(codec.write(model))
    scripts_only = len(codec.write(Model("binary", [Instance(
        "Folder", "root", {"Name": Prop("String", b"Bench")}, scripts)])))
    per_part = (sample - scripts_only) / 2000
    add_parts(max(0, int((TARGET_BYTES - sample) / per_part)))
    while True:
        root.children = scripts + parts
        data = codec.write(model)
        if len(data) >= TARGET_BYTES:
            return data
        add_parts(500)


@attrs.frozen
class World:
    uc: UseCases
    storage: Storage
    vault: KeyVault
    buyer: ActingPerson
    buyer_platform_id: str
    product_id: str


async def published(data: bytes, db: Path,
                    adjust: Callable[[Deps], Deps] = lambda deps: deps) -> World:
    """A fresh SQLite database with `data` published under a `minify` rule, granted to one
    buyer; `adjust` changes the parts the use cases are built from."""
    storage = open_storage(f"sqlite:///{db}")
    await storage.migrate()
    deps = adjust(make_deps(storage))
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Bench"))
    await uc.packages.change_settings(studio, c.ChangeSettings(
        product.id, protection=c.JsonValue(
            {"rules": [{"paths": ["Bench/Module*"], "preset": "minify"}]})))
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1",
                                                                data))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    await uc.lifecycle.change(studio, c.ChangeLicense(
        c.LicenseTarget(product.id, world.buyer.platform_id), LicenseEvent.GRANT))
    return World(uc, storage, deps.vault, ActingPerson(world.buyer.id),
                 world.buyer.platform_id, product.id)


def peak_growth(fn: Callable[[], object]) -> float:
    """Peak Python heap growth (MiB) while `fn` runs, by tracemalloc (slows it; run apart
    from the timings)."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return (tracemalloc.get_traced_memory()[1] - base) / 2**20
    finally:
        tracemalloc.stop()


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS


async def _rss_child(case: str, model: str, db: str) -> float:
    """In a fresh process: the peak resident memory growth (MiB) while `case` runs, from
    VmHWM after resetting it (Linux's /proc/self/clear_refs) to VmRSS just before."""
    return_large_buffers()  # as `licore serve` runs its workers
    data = _read(model)
    codec = RobloxModelCodec()
    work: Callable[[], Awaitable[object]]
    if case == "cold":
        w = await published(data, Path(db))
        await w.uc.library.download(w.buyer, c.DownloadCopy(w.product_id))  # warm caches
        async with w.storage.unit_of_work() as uow:
            await uow.copies.drop(product_id=w.product_id)

        async def work() -> object:
            return await w.uc.library.download(w.buyer, c.DownloadCopy(w.product_id))
    else:
        def full() -> bytes:
            return codec.write(codec.read(data))

        def untouched() -> bytes:
            return codec.write_sources(codec.read_sources(data))

        chosen: Callable[[], bytes] = full if case == "full" else untouched
        chosen()

        async def work() -> object:
            return chosen()
    gc.collect()
    _reset_peak()
    before = _status_kib("VmRSS")
    await work()
    grown = (_status_kib("VmHWM") - before) / 1024
    if case == "cold":
        await w.storage.close()
    return grown


def peak_rss_growth(case: str, data: bytes) -> float:
    """`_rss_child` run in its own interpreter, so no earlier case's freed memory is reused."""
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model.rbxm"
        model.write_bytes(data)
        out = subprocess.run(
            [sys.executable, "-m", "bench.download", "--rss-child", case, str(model),
             str(Path(tmp) / "rss.db")], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parents[1])
        return float(out.stdout.strip().splitlines()[-1])


def model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--mib", type=float, nargs="*", default=[5.0])
    parser.add_argument("--shape", choices=SHAPES, default="plain")


async def main() -> None:
    parser = argparse.ArgumentParser()
    model_args(parser)
    parser.add_argument("--runs", type=int, default=3, help="best of this many, per case")
    parser.add_argument("--skip-heap", action="store_true",
                        help="leave out the (slow) tracemalloc peak heap measurements")
    parser.add_argument("--rss-child", nargs=3, metavar=("CASE", "MODEL", "DB"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        print(f"{await _rss_child(*args.rss_child):.1f}")
        return
    global SHAPE, TARGET_BYTES
    SHAPE = args.shape
    for mib in args.mib:
        TARGET_BYTES = int(mib * 2**20)
        print(f"load average at start: {os.getloadavg()[0]:.1f}")
        await one(args.runs, not args.skip_heap)
        print(f"load average at end: {os.getloadavg()[0]:.1f}")


def instances(data: bytes) -> int:
    def count(nodes: list[Instance]) -> int:
        return sum(1 + count(n.children) for n in nodes)

    return count(RobloxModelCodec().read(data).roots)


async def one(runs: int, heap: bool) -> None:
    data = build_model()
    codec = RobloxModelCodec()

    def full() -> bytes:
        return codec.write(codec.read(data))

    def untouched() -> bytes:
        return codec.write_sources(codec.read_sources(data))

    baseline = best(full, runs)
    passthrough = best(untouched, runs)
    with tempfile.TemporaryDirectory() as tmp:
        w = await published(data, Path(tmp) / "bench.db")
        asked = c.DownloadCopy(w.product_id)

        async def cold() -> None:
            async with w.storage.unit_of_work() as uow:
                await uow.copies.drop(product_id=w.product_id)
            await w.uc.library.download(w.buyer, asked)

        t_cold = await best_async(cold, runs)
        t_cached = await best_async(lambda: w.uc.library.download(w.buyer, asked), runs + 2)
        await w.storage.close()
    baseline = min(baseline, best(full, runs))
    passthrough = min(passthrough, best(untouched, runs))
    mem_full = peak_growth(full) if heap else math.nan
    mem_sources = peak_growth(untouched) if heap else math.nan
    print(f"model: {len(data) / 2**20:.2f} MiB, {SHAPE} parts, {instances(data):,} instances, "
          f"{SCRIPTS} scripts ({SCRIPTS - 1} minified), binary")
    print(f"{'case':<46}{'seconds':>10}{'/ full':>9}{'/ bytes':>9}")
    for label, t in [("read + write whole tree, no changes (full)", baseline),
                     ("read + write sources only, no changes (bytes)", passthrough),
                     ("download, cold (prepare + store)", t_cold),
                     ("download, cached", t_cached)]:
        print(f"{label:<46}{t:>10.3f}{t / baseline:>9.2f}{t / passthrough:>9.2f}")
    print(f"peak heap growth: whole tree {mem_full:.0f} MiB, sources only {mem_sources:.0f} MiB")
    if heap:
        rss = {case: peak_rss_growth(case, data) for case in ("full", "bytes", "cold")}
        print(f"peak RSS growth, each in a fresh process: whole tree {rss['full']:.0f} MiB, "
              f"sources only untouched {rss['bytes']:.0f} MiB, download cold "
              f"{rss['cold']:.0f} MiB")


if __name__ == "__main__":
    asyncio.run(main())
