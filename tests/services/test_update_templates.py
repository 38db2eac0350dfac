"""`/update` from the version's node template: buyers' first calls answer byte for byte what
the whole copy gives (the answer before templates), the template is made once for many
concurrent first calls, and a copy made earlier (by a download) or remade under new rules is
spliced the same way."""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any

import attrs

from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.builds.nodes import nodes_json
from licore.builds.tree import Instance, Model, Prop
from licore.licenses import LicenseEvent
from licore.model import License, Product, Version
from licore.sealing import open_sealed
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from licore_cli.single_flight import AsyncSingleFlight
from tests.support.fakes import make_deps
from tests.support.models import product_model, script
from tests.support.scenario import build_world

BUYERS = ("7001", "7002", "7003", "7004", "7005")


class CountingCodec(RobloxModelCodec):
    """The real codec, counting whole reads (what a template saves each buyer)."""

    def __init__(self) -> None:
        self.whole_reads = 0

    def read(self, data: bytes) -> Model:
        self.whole_reads += 1
        return super().read(data)


@attrs.frozen
class Shop:
    uc: UseCases
    storage: Storage
    codec: CountingCodec
    studio: ActingStudio
    product_id: str


def _build(repeated: bool) -> bytes:
    model = product_model(extra=4)
    parts = [Instance("Part", f"p{i}", {"Name": Prop("String", f"P{i}".encode()),
                                        "Anchored": Prop("Bool", i % 2 == 0),
                                        "Size": Prop("Vector3", (1.0, 2.5, float(i)))})
             for i in range(30)]
    model.roots[0].children += parts
    if repeated:  # two scripts of one path, in an order other than their classes'
        model.roots[0].children[:0] = [script("Main", "print('a')\n", "LocalScript", "m1"),
                                       script("Main", "print('b')\n", "Script", "m2")]
    return RobloxModelCodec().write(model)


async def _shop(storage: Storage, repeated: bool = False) -> Shop:
    codec = CountingCodec()
    deps = attrs.evolve(make_deps(storage), models=codec, once=AsyncSingleFlight())
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Templated"))
    await uc.packages.change_settings(studio, c.ChangeSettings(product.id, protection=c.JsonValue(
        {"rules": [{"paths": ["Product/Extra*", "Product/Greeter"], "preset": "minify"}]})))
    version = (await uc.packages.upload(studio, c.UploadVersion(
        product.id, "1.0.0", _build(repeated)))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    for buyer in [*BUYERS, world.buyer.platform_id]:
        await uc.lifecycle.change(studio, c.ChangeLicense(
            c.LicenseTarget(product.id, buyer), LicenseEvent.GRANT))
    codec.whole_reads = 0  # publishing read it to check the rules
    return Shop(uc, storage, codec, studio, product.id)


async def _facts(shop: Shop, buyer: str) -> tuple[License, Product, Version, str]:
    async with shop.storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(shop.product_id, buyer)
        product = await uow.products.by_id(shop.product_id)
        assert lic is not None and product is not None and lic.key_ciphertext is not None
        assert product.current_version_id is not None
        version = await uow.versions.by_id(product.current_version_id)
        assert version is not None
    return lic, product, version, shop.uc.copies.vault.decrypt(lic.key_ciphertext, lic.id)


async def _update(shop: Shop, buyer: str, form: str) -> bytes:
    """The buyer's `/update` answer, opened: the plaintext the buyer verifies."""
    key = (await _facts(shop, buyer))[3]
    nonce = secrets.token_hex(16)
    answer = await shop.uc.runtime.update(
        c.Update(c.NumberOrText(buyer), shop.product_id, key, nonce, nodes=form), "10.0.0.1")
    assert answer is not None and answer.update
    return open_sealed(key, nonce, answer.sealed.cipher, answer.sealed.tag)


async def _whole_copy_answer(shop: Shop, buyer: str, form: str, plaintext: bytes) -> bytes:
    """What `/update` answered before templates: the buyer's copy read whole into nodes,
    under the same nonce and version."""
    lic, product, version, key = await _facts(shop, buyer)
    copy = await shop.uc.copies.prepared(lic, product, version, key)
    head: dict[str, Any] = json.loads(plaintext)
    nodes = nodes_json(RobloxModelCodec().read(copy), form == "compact")
    prefix = json.dumps({"nonce": head["nonce"], "version": head["version"]},
                        separators=(",", ":"), ensure_ascii=False).encode()
    return b"".join([prefix[:-1], b',"instances":', nodes, b"}"])


async def test_many_first_calls_make_the_template_once_and_answer_as_the_whole_copy(
        storage: Storage) -> None:
    shop = await _shop(storage)
    answers = await asyncio.gather(*(_update(shop, b, "compact") for b in BUYERS))
    assert shop.codec.whole_reads == 1  # the template's; no buyer's copy was read whole
    for buyer, plaintext in zip(BUYERS, answers, strict=True):
        assert plaintext == await _whole_copy_answer(shop, buyer, "compact", plaintext)
    assert len({json.dumps(json.loads(a)["instances"]) for a in answers}) == len(BUYERS)
    tagged = await _update(shop, BUYERS[0], "tagged")  # the other form: its own template
    assert shop.codec.whole_reads == 2
    assert tagged == await _whole_copy_answer(shop, BUYERS[0], "tagged", tagged)
    again = await _update(shop, BUYERS[1], "compact")  # kept nodes: nothing made
    assert shop.codec.whole_reads == 2
    assert json.loads(again)["instances"] == json.loads(answers[1])["instances"]


async def test_a_copy_made_by_a_download_and_one_remade_under_new_rules_are_spliced(
        storage: Storage) -> None:
    shop = await _shop(storage)
    person, platform_id = await _person_of(shop)
    await shop.uc.library.download(person, c.DownloadCopy(shop.product_id))
    await _update(shop, BUYERS[0], "compact")  # makes the template
    plaintext = await _update(shop, platform_id, "compact")
    assert shop.codec.whole_reads == 1  # the stored copy's sources, read alone, lined up
    assert plaintext == await _whole_copy_answer(shop, platform_id, "compact", plaintext)
    await shop.uc.packages.change_settings(shop.studio, c.ChangeSettings(
        shop.product_id, protection=c.JsonValue({"rules": []})))
    shop.codec.whole_reads = 0  # the rules were checked on the live build
    unprotected = await _update(shop, BUYERS[0], "compact")
    assert shop.codec.whole_reads == 0  # new rules drop copies, not the template
    assert unprotected == await _whole_copy_answer(shop, BUYERS[0], "compact", unprotected)
    assert b"print(0)\\n" in unprotected  # Extra0 as written, no longer minified


async def test_scripts_of_one_path_get_their_own_sources(storage: Storage) -> None:
    shop = await _shop(storage, repeated=True)
    first = await _update(shop, BUYERS[0], "tagged")
    assert first == await _whole_copy_answer(shop, BUYERS[0], "tagged", first)
    assert shop.codec.whole_reads == 1
    person, platform_id = await _person_of(shop)
    await shop.uc.library.download(person, c.DownloadCopy(shop.product_id))
    second = await _update(shop, platform_id, "tagged")
    # A stored copy's two `Main` cannot be told apart by path: it is read whole.
    assert shop.codec.whole_reads == 2
    assert second == await _whole_copy_answer(shop, platform_id, "tagged", second)


async def _person_of(shop: Shop) -> tuple[ActingPerson, str]:
    """The scenario's buyer account and platform id (it holds a license: `_shop`)."""
    async with shop.storage.unit_of_work() as uow:
        account = await uow.accounts.by_username("buyer")
    assert account is not None
    return ActingPerson(account.id), account.platform_id
