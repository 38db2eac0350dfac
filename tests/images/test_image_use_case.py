"""Whatever bytes a seller sends, the images use case either stores a clean re-encoded
image or refuses with a client error and stores nothing: never a crash, never the bytes
sent."""

from __future__ import annotations

import asyncio
import io

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from adapters_formats.images import PNG_SIGNATURE
from adapters_storage.memory.storage import MemoryStorage
from licore import commands as c
from licore import images as im
from licore.actors import ActingStudio
from licore.errors import LicoreError
from licore.services.wiring import UseCases
from tests.support.fakes import make_deps


async def _world() -> tuple[MemoryStorage, UseCases, ActingStudio, str]:
    storage = MemoryStorage()
    uc = UseCases.of(make_deps(storage))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    product = await uc.products.create(studio, c.CreateProduct("Kit"))
    return storage, uc, studio, product.id


WORLD = asyncio.run(_world())


def _real(kind: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (12, 9), (50, 60, 70)).save(out, kind)
    return out.getvalue()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=2048),
                 st.binary(max_size=2048).map(lambda b: PNG_SIGNATURE + b),
                 st.binary(max_size=2048).map(lambda b: b"\xff\xd8\xff" + b),
                 st.binary(min_size=1, max_size=64).map(lambda b: _real("PNG") + b),
                 st.binary(min_size=1, max_size=64).map(lambda b: _real("JPEG") + b)))
def test_random_bytes_are_refused_as_a_client_error_and_never_stored(sent: bytes) -> None:
    storage, uc, studio, product = WORLD

    async def attempt() -> None:
        try:
            await uc.images.add(studio, im.AddImage(product, sent))
        except LicoreError as error:
            assert error.status in (400, 413)
        else:
            raise AssertionError("random bytes were taken for an image")

    asyncio.run(attempt())
    assert storage.tables.images == {}


def test_a_real_image_is_stored_as_the_codec_made_it_not_as_sent() -> None:
    storage, uc, studio, product = asyncio.run(_world())
    sent = _real("PNG")
    made = asyncio.run(uc.images.add(studio, im.AddImage(product, sent, "  A kit  ")))
    (stored, data), = storage.tables.images.values()
    assert stored == made and made.alt == "A kit"
    assert Image.open(io.BytesIO(data)).size == (12, 9)
    assert made.size_bytes == len(data)


def test_without_an_image_codec_every_upload_is_refused() -> None:
    storage = MemoryStorage()
    uc = UseCases.of(attrs.evolve(make_deps(storage), images=None))

    async def attempt() -> LicoreError:
        await uc.operator.add_account("owner", "1001", None)
        studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
        product = await uc.products.create(studio, c.CreateProduct("Kit"))
        try:
            await uc.images.add(studio, im.AddImage(product.id, _real("PNG")))
        except LicoreError as error:
            return error
        raise AssertionError("taken without a codec")

    refused = asyncio.run(attempt())
    assert (refused.status, refused.description) == (400, "this server takes no product images")
    assert storage.tables.images == {}
