"""Cold and cached `GET /library/download` of a 5 MiB model with 200 scripts, as ratios to
reading and writing the same file with no changes (the baseline, measured in the same run).

Run from the repository root: `.venv/bin/python -m bench.download`. It drives the download
use case in-process on a fresh SQLite file (HTTP adds the same small cost to every case).
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from pathlib import Path

from tests.support.fakes import make_deps
from tests.support.models import LICENSE_SCRIPT, script
from tests.support.scenario import build_world, key_record

from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from bench.timing import best, best_async
from licore.builds.tree import Instance, Model, Prop
from licore.services import builds, packages, partner

TARGET_BYTES = 5 * 1024 * 1024
SCRIPTS = 200


def _source(rng: random.Random, i: int) -> str:
    lines = [f"-- module {i}: generated for the download benchmark"]
    for j in range(120):
        lines.append(f"local v{j} = {rng.randint(0, 10**6)} -- note {rng.random():.6f}")
    lines.append(f"return {{ id = {i} }}")
    return "\n".join(lines) + "\n"


def build_model() -> bytes:
    """200 scripts (one with the placeholder) and enough parts to reach 5 MiB on disk."""
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
            parts.append(Instance("Part", f"p{n}", {
                "Name": Prop("String", f"Part{n}".encode()),
                "CFrame": Prop("CFrame", (rng.uniform(-500, 500), rng.uniform(0, 100),
                                          rng.uniform(-500, 500), 1.0, 0.0, 0.0, 0.0, 1.0,
                                          0.0, 0.0, 0.0, 1.0)),
                "size": Prop("Vector3", (rng.uniform(1, 9), rng.uniform(1, 9),
                                         rng.uniform(1, 9))),
                "Color3uint8": Prop("Color3uint8", (rng.randrange(256), rng.randrange(256),
                                                   rng.randrange(256))),
                "Anchored": Prop("Bool", True),
                "Transparency": Prop("Float32", 0.0),
            }))

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




async def main() -> None:
    data = build_model()
    codec = RobloxModelCodec()
    baseline = best(lambda: codec.write(codec.read(data)), 3)
    with tempfile.TemporaryDirectory() as tmp:
        storage = open_storage(f"sqlite:///{Path(tmp) / 'bench.db'}")
        await storage.migrate()
        deps = make_deps(storage)
        world = await build_world(deps)
        key = await key_record(deps, world.studio_key)
        lib = await key_record(deps, world.library_key)
        product = await partner.save_product(deps, key, {"title": "Bench"})
        await packages.settings(deps, key, {"product_id": product["id"], "protection": {
            "rules": [{"paths": ["Bench/Module*"], "preset": "minify"}]}})
        version = (await packages.upload_version(
            deps, key, {"product_id": product["id"], "version": "1"}, data))["version"]
        await packages.publish(deps, key, {"product_id": product["id"],
                                           "version_id": version["id"]})
        await partner.grant(deps, key, {"product_id": product["id"],
                                        "user": world.buyer.platform_id})
        query = {"product_id": product["id"]}

        async def cold() -> None:
            async with storage.unit_of_work() as uow:
                await uow.copies.drop(product_id=product["id"])
            await builds.download(deps, lib, query)

        t_cold = await best_async(cold, 3)
        t_cached = await best_async(lambda: builds.download(deps, lib, query), 5)
        await storage.close()
    # The baseline again, after: the best of both runs, so a busy moment does not skew it.
    baseline = min(baseline, best(lambda: codec.write(codec.read(data)), 3))
    print(f"model: {len(data) / 2**20:.2f} MiB, {SCRIPTS} scripts "
          f"({SCRIPTS - 1} minified), binary")
    print(f"{'case':<36}{'seconds':>10}{'ratio':>10}")
    for label, t in [("read + write, no changes (baseline)", baseline),
                     ("download, cold (prepare + store)", t_cold),
                     ("download, cached", t_cached)]:
        print(f"{label:<36}{t:>10.3f}{t / baseline:>10.2f}")


if __name__ == "__main__":
    asyncio.run(main())
