"""Issue 13, item 13: reading, checking and writing model files never runs on the event loop,
on the upload path (check and hash), publishing, a buyer's download, `/update` and tracing
a leaked file. The codec is the real one, wrapped to note the thread each call runs on; the
offload is the server's own (`asyncio.to_thread`)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import attrs

from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.licenses import LicenseEvent
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import make_deps
from tests.support.models import product_model
from tests.support.scenario import build_world


class NotingCodec:
    """The real codec; each call noted with whether it ran on the event loop's thread."""

    def __init__(self, loop_thread: int) -> None:
        self.real = RobloxModelCodec()
        self.loop_thread = loop_thread
        self.calls: list[tuple[str, bool]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.real, name)

        def noted(*args: Any) -> Any:
            self.calls.append((name, threading.get_ident() == self.loop_thread))
            return method(*args)

        return noted


async def test_every_model_read_and_write_runs_off_the_event_loop(storage: Storage) -> None:
    codec = NotingCodec(threading.get_ident())
    deps = attrs.evolve(make_deps(storage), models=codec, offload=asyncio.to_thread)
    world = await build_world(deps)
    uc = UseCases.of(deps)
    studio, buyer = ActingStudio(world.studio.id), ActingPerson(world.buyer.id)
    product = await uc.products.create(studio, c.CreateProduct("Threads"))
    data = RobloxModelCodec().write(product_model(extra=2))
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1", data))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    await uc.lifecycle.change(studio, c.ChangeLicense(
        c.LicenseTarget(product.id, world.buyer.platform_id), LicenseEvent.GRANT))
    got = await uc.library.download(buyer, c.DownloadCopy(product.id))
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, world.buyer.platform_id)
    assert lic is not None and lic.key_ciphertext is not None
    key = deps.vault.decrypt(lic.key_ciphertext, lic.id)
    update = c.Update(c.NumberOrText(world.buyer.platform_id), product.id, key,
                      "nonce0123456789abcdef", None, "compact")
    assert await uc.runtime.update(update, "127.0.0.1") is not None
    await uc.copies.trace(studio.studio_id, product.id, "leak.rbxm", got.data)

    names = {name for name, _ in codec.calls}
    assert {"check", "read", "read_sources", "write_sources"} <= names, names
    assert [name for name, on_loop in codec.calls if on_loop] == []
