"""The audit trail's mechanism (docs/audit.md), through the use cases on every storage: each
change is told in its own unit of work with the actor its edge set (the app and key through
the Partner door, the person on a page, the operator, the platform through a claim, the
service by default) and the request id; a refused or rolled-back change leaves no entry; the
fields told are named, and the secrets never appear."""

from __future__ import annotations

import io
import json
from typing import Any, TypeVar

import attrs
import pytest
from PIL import Image

from adapters_formats.codec import RobloxModelCodec
from adapters_http.wire import audit_entry
from licore import commands as c
from licore import images as im
from licore import license_commands as lc
from licore.actors import ActingPerson, ActingStudio
from licore.audit import REQUEST_ID, Actor, ActorKind, AuditEntry, AuditFilter, acting
from licore.errors import AlreadyOwned
from licore.licenses import LicenseEvent
from licore.model import KeptAnswer
from licore.ports import NoUser, Ownership, PlatformUser
from licore.services import partner as op
from licore.services.deps import Settings
from licore.services.idempotency import Once
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import FakeClock, make_deps
from tests.support.models import product_model
from tests.support.scenario import World, build_world, key_record

T = TypeVar("T")
DAY = 86400


def _unnoted(key_id: str, quota: object) -> None:
    """The Partner door's note to the access log; nothing to note here."""


async def call(uc: UseCases, operation: op.Operation[Any, T], key: str, command: Any,
               request_id: str) -> T:
    """One Partner call as the HTTP edge makes it, inside its request id."""

    async def read() -> Any:
        return command

    token = REQUEST_ID.set(request_id)
    try:
        return await uc.partner.call(operation, key, read, _unnoted)
    finally:
        REQUEST_ID.reset(token)


async def trail(uc: UseCases, studio_id: str, **asked: Any) -> list[AuditEntry]:
    return list((await uc.audit.list(ActingStudio(studio_id),
                                     c.ListAudit(**asked))).items)


async def setup(storage: Storage, settings: Settings | None = None
                ) -> tuple[UseCases, World, FakeClock, str]:
    clock = FakeClock()
    deps = make_deps(storage, clock, settings)
    uc = UseCases.of(deps)
    world = await build_world(deps)
    product = await uc.products.create(ActingStudio(world.studio.id),
                                       c.CreateProduct("Kit", "", "", 0))
    return uc, world, clock, product.id


def grant(product_id: str, user: str, days: int | None = None) -> lc.GrantLicense:
    return lc.GrantLicense(c.LicenseTarget(product_id, user), lc.Terms(duration_days=days))


async def test_an_apps_grant_is_told_with_the_app_its_key_and_the_request(
        storage: Storage) -> None:
    uc, world, _, product_id = await setup(storage)
    key = await key_record(make_deps(storage), world.studio_key)
    await call(uc, op.GRANT, world.studio_key, grant(product_id, "2002"), "req-grant")
    [entry] = await trail(uc, world.studio.id, action="license")
    assert entry.action == "license.granted" and entry.request_id == "req-grant"
    assert entry.actor == Actor(ActorKind.APP, world.client.id, key.id)
    assert entry.subject_type == "license" and entry.studio_id == world.studio.id
    told = {ch.field: ch for ch in entry.changes}
    assert told["platform_id"].new == "2002" and told["state"].new == "active"
    # the key's ciphertext and digest are named, never shown
    assert not told["key_ciphertext"].shown and told["key_ciphertext"].new is None


async def test_a_refused_call_leaves_no_entry(storage: Storage) -> None:
    uc, world, _, product_id = await setup(storage)
    await call(uc, op.GRANT, world.studio_key, grant(product_id, "2002"), "req-1")
    with pytest.raises(AlreadyOwned):
        await call(uc, op.GRANT, world.studio_key, grant(product_id, "2002"), "req-2")
    assert [e.request_id for e in await trail(uc, world.studio.id, action="license")] == [
        "req-1"]


async def test_a_change_rolled_back_leaves_no_entry(storage: Storage) -> None:
    uc, world, _, _ = await setup(storage)
    with pytest.raises(RuntimeError):
        async with uc.audit.storage.unit_of_work() as uow:
            await uow.abuse.blacklist.set(world.studio.id, "777", True, 1)
            # told inside the unit of work, as part of it
            assert [e.action for e in (await uow.audit.of_studio(
                world.studio.id, AuditFilter(action="blacklist"), 10, None)).items] == [
                "blacklist.added"]
            raise RuntimeError("the request failed after the change")
    assert await trail(uc, world.studio.id, action="blacklist") == []


async def test_a_keyed_retry_replays_without_a_second_entry(storage: Storage) -> None:
    """An Idempotency-Key retry runs nothing: the first call's entry stands alone, committed
    with its kept answer."""
    uc, world, _, product_id = await setup(storage)
    command = grant(product_id, "2002")

    async def read() -> Any:
        return command

    once = Once("k-1", lambda: "fingerprint",
                lambda _: KeptAnswer(200, "application/json", b"{}"))
    for rid in ("req-first", "req-retry"):
        token = REQUEST_ID.set(rid)
        try:
            await uc.partner.call_once(op.GRANT, world.studio_key, read, _unnoted, once)
        finally:
            REQUEST_ID.reset(token)
    told = await trail(uc, world.studio.id, action="license")
    assert [e.request_id for e in told] == ["req-first"]


async def test_revoke_and_rekey_are_named_by_what_changed(storage: Storage) -> None:
    uc, world, _, product_id = await setup(storage)
    target = c.LicenseTarget(product_id, "2002")
    await call(uc, op.GRANT, world.studio_key, grant(product_id, "2002"), "r1")
    await call(uc, op.REKEY, world.studio_key, target, "r2")
    await call(uc, op.PAUSE, world.studio_key, target, "r3")
    await call(uc, op.RESUME, world.studio_key, target, "r4")
    await call(uc, op.REVOKE, world.studio_key, target, "r5")
    told = await trail(uc, world.studio.id, action="license")
    assert [(e.action, e.request_id) for e in told] == [
        ("license.revoked", "r5"), ("license.resumed", "r4"), ("license.paused", "r3"),
        ("license.rekeyed", "r2"), ("license.granted", "r1")]
    rekeyed = {ch.field: ch for ch in told[3].changes}
    generation = rekeyed["key_generation"]
    assert isinstance(generation.old, int) and generation.new == generation.old + 1
    assert not rekeyed["key_digest"].shown


async def test_settings_are_told_by_name_and_the_unlock_data_never_by_value(
        storage: Storage) -> None:
    uc, world, _, product_id = await setup(storage)
    secret_data = {"webhook": "sk_live_do_not_leak"}
    await call(uc, op.SETTINGS, world.studio_key, c.ChangeSettings(
        product_id, placeholder="MY_KEY", unlock_data=c.JsonValue(secret_data)), "req-s")
    [entry] = await trail(uc, world.studio.id, action="product.settings_changed")
    told = {ch.field: ch for ch in entry.changes}
    assert (told["placeholder"].old, told["placeholder"].new) == ("LICORE_LICENSE_KEY",
                                                                    "MY_KEY")
    assert not told["unlock_data"].shown
    assert "sk_live_do_not_leak" not in json.dumps(audit_entry(entry))


async def test_the_person_the_operator_the_platform_and_the_service(storage: Storage) -> None:
    uc, world, clock, product_id = await setup(storage)
    studio = ActingStudio(world.studio.id)
    with acting(Actor(ActorKind.PERSON, world.owner.id)):
        await uc.lifecycle.change(studio, c.ChangeLicense(c.LicenseTarget(product_id, "3003"),
                                                          LicenseEvent.GRANT))
    with acting(Actor(ActorKind.OPERATOR, "ops")):
        await uc.operator.set_collaborator(world.studio.name, world.buyer.username,
                                           frozenset())
    await uc.lifecycle.grant(studio, grant(product_id, "4004", days=1))
    clock.advance(2 * DAY)
    assert await uc.lifecycle.sweep_expiries() >= 1
    persons = await trail(uc, world.studio.id, actor=world.owner.id)
    assert [e.action for e in persons] == ["license.granted"]
    [added] = await trail(uc, world.studio.id, subject=world.buyer.id)
    assert (added.action, added.actor) == ("collaborator.added",
                                           Actor(ActorKind.OPERATOR, "ops"))
    [expired] = await trail(uc, world.studio.id, action="license.expired")
    assert expired.actor.kind is ActorKind.SERVICE and expired.request_id is None


@attrs.frozen
class OwnsEverything:
    async def owns_pass(self, platform_id: str, pass_id: str) -> Ownership:
        return Ownership.OWNED

    async def who(self, platform_id: str) -> PlatformUser | NoUser:
        return NoUser.UNKNOWN


async def test_a_claim_is_the_platforms_doing(storage: Storage) -> None:
    clock = FakeClock()
    deps = attrs.evolve(make_deps(storage, clock), platform=OwnsEverything())
    uc = UseCases.of(deps)
    world = await build_world(deps)
    studio = ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Pass kit", "", "", 0))
    await uc.packages.change_settings(studio, c.ChangeSettings(
        product.id, purchase_pass_id=c.NumberOrText("31337")))
    await uc.products.change(studio, c.ChangeProduct(product.id, discoverable=True))
    with acting(Actor(ActorKind.PERSON, world.buyer.id)):  # the store page's edge
        await uc.claims.claim(ActingPerson(world.buyer.id), c.ClaimPurchase(product.id))
    [entry] = await trail(uc, world.studio.id, action="license.granted")
    assert entry.actor == Actor(ActorKind.PLATFORM, "purchase_pass:31337")


async def test_no_secret_reaches_an_entry(storage: Storage) -> None:
    """Every secret this test makes (API keys, license keys, a webhook secret old and new, a
    password) is absent from every entry written, as JSON."""
    uc, world, _, product_id = await setup(storage)
    secrets: list[str] = [world.studio_key, world.library_key]
    await call(uc, op.GRANT, world.studio_key, grant(product_id, "2002"), "r1")
    await call(uc, op.REKEY, world.studio_key, c.LicenseTarget(product_id, "2002"), "r2")
    deps = make_deps(storage)
    async with storage.unit_of_work() as uow:
        held = await uow.licenses.for_user(product_id, "2002")
    assert held is not None and held.key_ciphertext is not None
    secrets.append(deps.vault.decrypt(held.key_ciphertext, held.id))
    shown = await call(uc, op.ADD_WEBHOOK, world.studio_key,
                       c.AddWebhook("https://hooks.example.com/in", ("license.granted",)),
                       "r3")
    rotated = await call(uc, op.ROTATE_WEBHOOK, world.studio_key,
                         c.WebhookTarget(shown.endpoint.id), "r4")
    secrets += [shown.secret, rotated.secret]
    with acting(Actor(ActorKind.OPERATOR, "ops")):
        await uc.operator.set_password(world.owner.username, "correct horse battery")
    secrets.append("correct horse battery")
    async with storage.unit_of_work() as uow:
        everything = [audit_entry(e) for e in (await uow.audit.of_studio(
            world.studio.id, AuditFilter(), 1000, None)).items]
    text = json.dumps(everything)
    assert {"webhook.added", "webhook.secret_rotated", "license.rekeyed"} <= {
        e["action"] for e in everything}
    for secret in secrets:
        assert secret not in text


async def test_old_entries_are_swept_after_the_retention(storage: Storage) -> None:
    uc, world, clock, product_id = await setup(storage, Settings(audit_retention_days=30))
    await call(uc, op.GRANT, world.studio_key, grant(product_id, "2002"), "r1")
    clock.advance(31 * DAY)
    await call(uc, op.GRANT, world.studio_key, grant(product_id, "2003"), "r2")
    await uc.housekeeping.sweep()
    assert [e.request_id for e in await trail(uc, world.studio.id)] == ["r2"]


async def test_a_key_is_told_as_the_app_taking_it_with_its_approver(storage: Storage) -> None:
    uc, world, _, _ = await setup(storage)
    key = await key_record(make_deps(storage), world.studio_key)
    [issued] = await trail(uc, world.studio.id, action="api_key.issued")
    assert issued.actor == Actor(ActorKind.APP, world.client.id, key.id)
    assert (issued.subject_type, issued.subject_id) == ("api_key", key.id)
    told = {ch.field: ch.new for ch in issued.changes}
    assert told["account_id"] == world.owner.id and told["kind"] == "studio"
    assert "digest" not in told


async def test_a_key_revoked_by_its_holder_is_the_apps_doing(storage: Storage) -> None:
    uc, world, _, _ = await setup(storage)
    key = await key_record(make_deps(storage), world.studio_key)
    await uc.keys.revoke_bearer(world.studio_key)
    [revoked] = await trail(uc, world.studio.id, action="api_key.revoked")
    assert revoked.actor == Actor(ActorKind.APP, world.client.id, key.id)


async def test_publishing_to_a_channel_and_withdrawing_are_told(storage: Storage) -> None:
    """Release channels (docs/api.md): a publish names its channel, a build sent from beta
    to stable is told again, and a withdrawal is told once (a second changes nothing)."""
    uc, world, _, product_id = await setup(storage)
    studio = ActingStudio(world.studio.id)
    data = RobloxModelCodec().write(product_model())
    first = (await uc.packages.upload(studio, c.UploadVersion(product_id, "1", data))).version
    second = (await uc.packages.upload(studio, c.UploadVersion(product_id, "2", data))).version
    await uc.packages.publish(studio, c.PublishVersion(product_id, first.id))
    await uc.packages.publish(studio, c.PublishVersion(product_id, second.id, "beta"))
    await uc.packages.publish(studio, c.PublishVersion(product_id, second.id))
    for _ in range(2):
        await uc.packages.withdraw(studio, c.WithdrawVersion(product_id, first.id))
    told = [(e.action, e.subject_id, {ch.field: ch.new for ch in e.changes})
            for e in reversed(await trail(uc, world.studio.id, action="version"))]
    assert [t for t in told if t[0] != "version.uploaded"] == [
        ("version.published", first.id, {"label": "1", "channel": "stable"}),
        ("version.published", second.id, {"label": "2", "channel": "beta"}),
        ("version.published", second.id, {"label": "2", "channel": "stable"}),
        ("version.withdrawn", first.id, {"withdrawn_at": told[-1][2]["withdrawn_at"]}),
    ]


async def test_a_products_pictures_are_told(storage: Storage) -> None:
    uc, world, _, product_id = await setup(storage)
    studio = ActingStudio(world.studio.id)
    made = []
    for colour in ((1, 2, 3), (4, 5, 6)):
        out = io.BytesIO()
        Image.new("RGB", (12, 9), colour).save(out, "PNG")
        made.append(await uc.images.add(studio, im.AddImage(product_id, out.getvalue())))
    await uc.images.order(studio, im.OrderImages(product_id, (made[1].id, made[0].id)))
    await uc.images.describe(studio, im.DescribeImage(product_id, made[1].id, "A red sword"))
    await uc.images.describe(studio, im.DescribeImage(product_id, made[1].id, "A red sword"))
    await uc.images.remove(studio, im.RemoveImage(product_id, made[0].id))
    entries = [e for e in reversed(await trail(uc, world.studio.id)) if "image" in e.action]
    told = [(e.action, e.subject_id) for e in entries]
    assert told == [("product.image_added", made[0].id), ("product.image_added", made[1].id),
                    ("product.images_ordered", product_id),
                    ("product.image_described", made[1].id),  # once: the second changed nothing
                    ("product.image_removed", made[0].id)]
    described = entries[3].changes
    assert [(ch.field, ch.old, ch.new) for ch in described] == [("alt", "", "A red sword")]
