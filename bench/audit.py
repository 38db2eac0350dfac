"""What the audit trail costs a change: grants and revokes through `Licensing.change` on
SQLite (a file, as `licore serve` uses it), with the use case given the audited storage and,
as the baseline measured in the same run, the storage without it.

Run from the repository root: `.venv/bin/python bench/audit.py [--changes 400] [--repeat 3]`.

Each round grants a license to `--changes` new users and revokes them again, one unit of
work each; best of `--repeat` rounds, each side in turn. The ratio is audited / baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.support.fakes import make_deps  # noqa: E402
from tests.support.scenario import build_world  # noqa: E402

from adapters_storage import open_storage  # noqa: E402
from licore import commands as c  # noqa: E402
from licore.actors import ActingStudio  # noqa: E402
from licore.licenses import LicenseEvent  # noqa: E402
from licore.services.announce import Announcer  # noqa: E402
from licore.services.audit import Audited  # noqa: E402
from licore.services.idempotency import Joining  # noqa: E402
from licore.services.ids import Ids  # noqa: E402
from licore.services.license_lifecycle import LicenseLifecycle  # noqa: E402
from licore.services.wiring import UseCases  # noqa: E402


async def run(changes: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        storage = open_storage(f"sqlite:///{tmp}/bench.db")
        await storage.migrate()
        deps = make_deps(storage)
        world = await build_world(deps)
        studio = ActingStudio(world.studio.id)
        product = await UseCases.of(deps).products.create(
            studio, c.CreateProduct("Bench kit", "", "", 0))
        ids = Ids(deps.clock, deps.random)

        def licensing(audited: bool) -> LicenseLifecycle:
            joined = Joining(storage)
            return LicenseLifecycle(Audited(joined, ids) if audited else joined, deps.clock,
                                    ids, Announcer(deps.clock, ids), deps.random, deps.vault)

        sides = {"baseline": licensing(False), "audited": licensing(True)}
        best = dict.fromkeys(sides, float("inf"))
        user = 10_000
        for _ in range(repeat):
            for name, uses in sides.items():
                users = [str(user + i) for i in range(changes)]
                user += changes
                start = time.perf_counter()
                for event in (LicenseEvent.GRANT, LicenseEvent.REVOKE):
                    for platform_id in users:
                        await uses.change(studio, c.ChangeLicense(
                            c.LicenseTarget(product.id, platform_id), event))
                best[name] = min(best[name], time.perf_counter() - start)
        await storage.close()
    per = {name: best[name] / (2 * changes) * 1e6 for name in sides}
    print(f"{2 * changes} changes a round, best of {repeat}")
    for name in sides:
        print(f"  {name:8} {per[name]:8.0f} us a change")
    print(f"  ratio    {per['audited'] / per['baseline']:8.2f}")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--changes", type=int, default=400)
    args.add_argument("--repeat", type=int, default=3)
    opts = args.parse_args()
    asyncio.run(run(opts.changes, opts.repeat))


if __name__ == "__main__":
    main()
