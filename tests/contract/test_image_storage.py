"""Product images in storage (`Images`), on the in-memory store, SQLite and PostgreSQL:
kept in order with their files, refused past the limit or twice, removed without gaps,
reordered, found by digest; and the use case stores nothing for a bad file."""

from __future__ import annotations

import asyncio
import io

import attrs
import pytest
from PIL import Image

from licore import commands as c
from licore import images as im
from licore.actors import ActingStudio
from licore.errors import AlreadyExists, InvalidRequest, NotFound, PayloadTooLarge
from licore.model import Product
from licore.services.wiring import UseCases
from licore.storage_ports import ImageRefused, Storage
from tests.support.fakes import make_deps


def _image(product: Product, n: int) -> im.ProductImage:
    return im.ProductImage(id=f"img_{n:04d}", product_id=product.id, position=99,
                           sha256=f"{n:064x}", content_type="image/png", width=n, height=2,
                           size_bytes=3, alt=f"picture {n}", created_at=n)


async def _world(storage: Storage) -> tuple[UseCases, ActingStudio, Product]:
    uc = UseCases.of(make_deps(storage))
    await uc.operator.add_account("owner", "1001", None)
    studio = ActingStudio((await uc.operator.add_studio("Studio", "owner")).id)
    return uc, studio, await uc.products.create(studio, c.CreateProduct("Kit"))


def png(color: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 6), color).save(out, "PNG")
    return out.getvalue()


async def test_images_are_kept_in_order_with_their_files(storage: Storage) -> None:
    _, _, product = await _world(storage)
    async with storage.unit_of_work() as uow:
        first = await uow.images.add(_image(product, 1), b"one", 3)
        second = await uow.images.add(_image(product, 2), b"two", 3)
    assert isinstance(first, im.ProductImage) and isinstance(second, im.ProductImage)
    assert (first.position, second.position) == (0, 1)
    async with storage.unit_of_work() as uow:
        assert list(await uow.images.of_product(product.id)) == [first, second]
        assert await uow.images.firsts([product.id, "prd_other"]) == {product.id: first}
        assert await uow.images.firsts([]) == {}
        many = [f"prd_{n:05d}" for n in range(1200)] + [product.id]  # more than one slice
        assert await uow.images.firsts(many) == {product.id: first}
        found = await uow.images.file(second.sha256)
        assert found == im.ImageFile(second.sha256, "image/png", b"two")
        assert found is not None and found.data == b"two"
        assert await uow.images.file("f" * 64) is None


async def test_the_same_file_twice_and_one_past_the_limit_are_refused(storage: Storage) -> None:
    _, _, product = await _world(storage)
    async with storage.unit_of_work() as uow:
        await uow.images.add(_image(product, 1), b"one", 2)
        twin = attrs.evolve(_image(product, 9), sha256=_image(product, 1).sha256)
        assert await uow.images.add(twin, b"one", 2) is ImageRefused.TAKEN
        await uow.images.add(_image(product, 2), b"two", 2)
        assert await uow.images.add(_image(product, 3), b"three", 2) is ImageRefused.FULL
        assert len(await uow.images.of_product(product.id)) == 2


async def test_removing_closes_the_gap_and_ordering_sticks(storage: Storage) -> None:
    _, _, product = await _world(storage)
    async with storage.unit_of_work() as uow:
        for n in (1, 2, 3):
            await uow.images.add(_image(product, n), b"x%d" % n, 8)
    async with storage.unit_of_work() as uow:
        assert await uow.images.remove(product.id, "img_0001")
        assert not await uow.images.remove(product.id, "img_0001")
        assert not await uow.images.remove("prd_other", "img_0002")
        left = await uow.images.of_product(product.id)
        assert [(i.id, i.position) for i in left] == [("img_0002", 0), ("img_0003", 1)]
        placed = await uow.images.set_order(product.id, ["img_0003", "img_0002"])
        assert [(i.id, i.position) for i in placed] == [("img_0003", 0), ("img_0002", 1)]
    async with storage.unit_of_work() as uow:
        now = await uow.images.of_product(product.id)
        assert [(i.id, i.position) for i in now] == [("img_0003", 0), ("img_0002", 1)]
        assert (await uow.images.firsts([product.id]))[product.id].id == "img_0003"
        # An order read before a change meanwhile: a removed image is skipped, one added
        # follows, and the positions still run from 0.
        await uow.images.add(_image(product, 4), b"x4", 8)
        placed = await uow.images.set_order(product.id, ["img_0001", "img_0002"])
        assert [(i.id, i.position) for i in placed] == [
            ("img_0002", 0), ("img_0003", 1), ("img_0004", 2)]
        assert list(await uow.images.of_product(product.id)) == list(placed)


async def test_an_images_text_changes_alone(storage: Storage) -> None:
    uc, studio, product = await _world(storage)
    async with storage.unit_of_work() as uow:
        for n in (1, 2):
            await uow.images.add(_image(product, n), b"x%d" % n, 8)
    async with storage.unit_of_work() as uow:
        described = await uow.images.set_alt(product.id, "img_0002", "A blue shield")
        assert described == attrs.evolve(_image(product, 2), position=1, alt="A blue shield")
        assert await uow.images.set_alt("prd_other", "img_0002", "x") is None
        assert await uow.images.set_alt(product.id, "img_9999", "x") is None
    async with storage.unit_of_work() as uow:
        kept = await uow.images.of_product(product.id)
        assert [i.alt for i in kept] == ["picture 1", "A blue shield"]
        assert (await uow.images.file(kept[1].sha256)) == im.ImageFile(kept[1].sha256,
                                                                        "image/png", b"x2")
    # Through the use case: trimmed, another's image or product not found.
    got = await uc.images.describe(studio, im.DescribeImage(product.id, "img_0001", "  Axe "))
    assert got.alt == "Axe"
    with pytest.raises(NotFound):
        await uc.images.describe(studio, im.DescribeImage(product.id, "img_9999", "x"))
    with pytest.raises(InvalidRequest):
        im.DescribeImage(product.id, "img_0001", "x" * 201)


async def test_a_rolled_back_add_leaves_nothing(storage: Storage) -> None:
    _, _, product = await _world(storage)
    with pytest.raises(RuntimeError):
        async with storage.unit_of_work() as uow:
            await uow.images.add(_image(product, 1), b"one", 8)
            raise RuntimeError
    async with storage.unit_of_work() as uow:
        assert list(await uow.images.of_product(product.id)) == []
        assert await uow.images.file(_image(product, 1).sha256) is None


async def test_concurrent_adds_never_pass_the_limit(storage: Storage) -> None:
    uc, studio, product = await _world(storage)
    colors = [(n * 20, 10, 10) for n in range(im.MAX_IMAGES + 4)]
    outcomes = await asyncio.gather(
        *(uc.images.add(studio, im.AddImage(product.id, png(color))) for color in colors),
        return_exceptions=True)
    added = [o for o in outcomes if isinstance(o, im.ProductImage)]
    assert len(added) == im.MAX_IMAGES
    assert all(isinstance(o, InvalidRequest) for o in outcomes if o not in added)
    shown = await uc.images.shown(product.id)
    assert sorted(i.position for i in shown) == list(range(im.MAX_IMAGES))


async def test_the_use_case_stores_nothing_for_a_bad_file(storage: Storage) -> None:
    uc, studio, product = await _world(storage)
    polyglot = png((1, 2, 3)) + b"<html>"
    for bad, error in ((b"not an image", InvalidRequest), (polyglot, InvalidRequest),
                       (b"\x89PNG" + b"\0" * im.MAX_IMAGE_BYTES, PayloadTooLarge),
                       (b"", InvalidRequest)):
        with pytest.raises(error):
            await uc.images.add(studio, im.AddImage(product.id, bad))
    with pytest.raises(InvalidRequest):
        await uc.images.add(studio, im.AddImage(product.id, png((1, 2, 3)),
                                                content_type="image/jpeg"))
    assert await uc.images.shown(product.id) == ()
    good = await uc.images.add(studio, im.AddImage(product.id, png((1, 2, 3)), "A kit"))
    with pytest.raises(AlreadyExists):
        await uc.images.add(studio, im.AddImage(product.id, png((1, 2, 3))))
    assert await uc.images.shown(product.id) == (good,)
    served = await uc.images.file(good.file_name)
    assert served.content_type == "image/png" and len(served.data) == good.size_bytes


async def test_another_studios_product_is_not_found(storage: Storage) -> None:
    uc, studio, product = await _world(storage)
    await uc.operator.add_account("other", "1002", None)
    other = ActingStudio((await uc.operator.add_studio("Other", "other")).id)
    mine = await uc.images.add(studio, im.AddImage(product.id, png((9, 9, 9))))
    for attempt in (uc.images.add(other, im.AddImage(product.id, png((8, 8, 8)))),
                    uc.images.list(other, im.ImagesOf(product.id)),
                    uc.images.remove(other, im.RemoveImage(product.id, mine.id)),
                    uc.images.describe(other, im.DescribeImage(product.id, mine.id, "mine")),
                    uc.images.order(other, im.OrderImages(product.id, (mine.id,)))):
        with pytest.raises(NotFound):
            await attempt
    with pytest.raises(NotFound):
        await uc.images.file(mine.sha256 + ".jpg")  # the right digest, the wrong suffix
    with pytest.raises(InvalidRequest):
        await uc.images.order(studio, im.OrderImages(product.id, ("img_nope",)))
    assert await uc.images.shown(product.id) == (mine,)


async def test_concurrent_changes_keep_the_positions_running_from_zero(
        storage: Storage) -> None:
    uc, studio, product = await _world(storage)
    made = [await uc.images.add(studio, im.AddImage(product.id, png((n * 30, 1, 1))))
            for n in range(6)]
    await asyncio.gather(
        *(uc.images.remove(studio, im.RemoveImage(product.id, m.id)) for m in made[:3]),
        *(uc.images.add(studio, im.AddImage(product.id, png((1, n * 30, 1))))
          for n in range(1, 3)),
        uc.images.order(studio, im.OrderImages(product.id, tuple(m.id for m in made[::-1]))),
        return_exceptions=True)  # the order may meet a changed set and be refused
    shown = await uc.images.shown(product.id)
    assert len(shown) == 5
    assert [i.position for i in shown] == list(range(5))
