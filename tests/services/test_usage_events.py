"""What the usage series counts at a state change (docs/api.md, "Usage"): licenses granted
and revoked through the use cases, and a buyer's downloads by version, each in the unit of
work of the change, read back through `Usage.series`; on the three stores."""

from __future__ import annotations

from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.licenses import LicenseEvent
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from licore.usage import DAY, UsageOf
from tests.support.fakes import make_deps
from tests.support.models import product_model
from tests.support.scenario import build_world


async def test_grants_revocations_and_downloads_are_counted(storage: Storage) -> None:
    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Counted"))
    data = RobloxModelCodec().write(product_model())
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1.0", data))
               ).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    target = c.LicenseTarget(product.id, world.buyer.platform_id)
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.GRANT))
    for _ in range(2):
        await uc.library.download(ActingPerson(world.buyer.id), c.DownloadCopy(product.id))
    await uc.lifecycle.change(studio, c.ChangeLicense(target, LicenseEvent.REVOKE))

    now = deps.clock.now()
    found = await uc.usage.series(studio, UsageOf(now - DAY, now + 1, product.id, "day"))
    licenses = {k: sum(p.licenses[k] for p in found.points) for k in found.points[0].licenses}
    assert licenses == {"granted": 1, "claimed": 0, "expired": 0, "revoked": 1}
    assert [p.downloads for p in found.points if p.downloads] == [{"1.0": 2}]
