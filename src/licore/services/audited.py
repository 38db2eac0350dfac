"""The repositories whose writes the audit trail tells (docs/audit.md), each a thin layer over
the storage's own: a write goes through, and when it changed something an entry is added in
the same unit of work, with the record as it was before (read first, in the same
transaction) and as it is now. Reads pass through untouched (`__getattr__`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from licore.audit import Change, changes, named
from licore.events import ChatRole, WebhookEndpoint
from licore.images import ProductImage
from licore.licenses import LicenseState
from licore.model import (
    Account,
    ApiKey,
    Client,
    License,
    Membership,
    Plan,
    Product,
    Studio,
    Tier,
    Version,
    VersionScript,
)
from licore.releases import Channel
from licore.services import audit_rules as r
from licore.services.audit_journal import Journal
from licore.storage_ports import (
    Accounts,
    ApiKeys,
    Blacklist,
    Clients,
    Hooks,
    ImageRefused,
    Images,
    Licenses,
    Notice,
    Outbox,
    Products,
    RuntimeRecords,
    Studios,
    Versions,
)


class _Layer:
    """Reads go to the storage's repository as they are."""

    def __init__(self, inner: Any, journal: Journal) -> None:
        self.inner = inner
        self.journal = journal

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class AuditedLicenses(_Layer):
    inner: Licenses

    async def add(self, license: License) -> bool:
        added = await self.inner.add(license)
        if added:
            await self.journal.of_product(
                license.product_id, "license.granted", "license", license.id,
                changes(None, license, r.LICENSE_SHOWN, r.CREATED))
        return added

    async def replace(self, license: License, expected: LicenseState) -> bool:
        before = await self.inner.by_id(license.id)
        replaced = await self.inner.replace(license, expected)
        told = () if before is None else changes(before, license, r.LICENSE_SHOWN, r.CREATED)
        if replaced and before is not None and told:
            await self.journal.of_product(license.product_id,
                                          r.license_action(before, license), "license",
                                          license.id, told)
        return replaced

    async def move(self, old: License, expected: LicenseState, new: License) -> bool:
        """A transfer is one entry, `license.transferred`, of the license that moved: its
        own changes and the license it became."""
        before = await self.inner.by_id(old.id)
        moved = await self.inner.move(old, expected, new)
        if moved and before is not None:
            await self.journal.of_product(
                old.product_id, "license.transferred", "license", old.id,
                changes(before, old, r.LICENSE_SHOWN, r.CREATED)
                + named({"new_license_id": (None, new.id)}))
        return moved

    async def mark_told(self, license_id: str, notice: Notice, expires_at: int) -> bool:
        marked = await self.inner.mark_told(license_id, notice, expires_at)
        found = await self.inner.by_id(license_id) if marked else None
        if found is not None and notice is Notice.EXPIRED:
            await self.journal.of_product(found.product_id, "license.expired", "license",
                                          license_id, named({"expires_at": (None, expires_at)}))
        return marked


class AuditedProducts(_Layer):
    inner: Products

    async def by_id(self, product_id: str) -> Product | None:
        # Nearly every change reads its product first: the studio an entry of its licenses
        # and versions belongs to is known without asking again (it never changes).
        found = await self.inner.by_id(product_id)
        if found is not None:
            self.journal.owner_is(product_id, found.studio_id)
        return found

    async def hold(self, product_id: str) -> Product | None:
        found = await self.inner.hold(product_id)
        if found is not None:
            self.journal.owner_is(product_id, found.studio_id)
        return found

    async def add(self, product: Product, slug_base: str) -> Product:
        stored = await self.inner.add(product, slug_base)
        await self.journal.add(stored.studio_id, "product.created", "product", stored.id,
                               changes(None, stored, r.PRODUCT_SHOWN, r.PRODUCT_QUIET))
        return stored

    async def save(self, product: Product) -> None:
        before = await self.inner.by_id(product.id)
        await self.inner.save(product)
        if before is None:
            return
        told = changes(before, product, r.PRODUCT_SHOWN, r.PRODUCT_QUIET)
        if told:
            action = r.product_action(frozenset(c.field for c in told))
            await self.journal.add(product.studio_id, action, "product", product.id, told)

    async def set_tiers(self, product_id: str, tiers: Sequence[Tier]) -> None:
        before = {t.name: t.unlock_data for t in await self.inner.tiers(product_id)}
        await self.inner.set_tiers(product_id, tiers)
        after = {t.name: t.unlock_data for t in tiers}
        if before == after:
            return
        told = named({"tiers": (tuple(before), tuple(after))})
        if any(before[n] != after[n] for n in before.keys() & after.keys()):
            told += (Change("unlock_data", shown=False),)
        await self.journal.of_product(product_id, "product.tiers_changed", "product",
                                      product_id, told)


    async def set_plans(self, product_id: str, plans: Sequence[Plan]) -> None:
        before = tuple(await self.inner.plans(product_id))
        await self.inner.set_plans(product_id, plans)
        after = tuple(plans)
        if before != after:
            await self.journal.of_product(
                product_id, "product.plans_changed", "product", product_id,
                named({"plans": (tuple(_plan(p) for p in before),
                                 tuple(_plan(p) for p in after))}))


def _plan(p: Plan) -> str:
    """A plan as the trail shows it: `id: name, 30 days, tier pro`."""
    term = "for good" if p.duration_days is None else f"{p.duration_days} days"
    return f"{p.id}: {p.name}, {term}" + (f", tier {p.tier}" if p.tier else "")


class AuditedVersions(_Layer):
    inner: Versions

    async def add(self, version: Version, data: bytes,
                  scripts: Sequence[VersionScript]) -> bool:
        added = await self.inner.add(version, data, scripts)
        if added:
            await self.journal.of_product(version.product_id, "version.uploaded", "version",
                                          version.id,
                                          changes(None, version, r.VERSION_SHOWN, r.CREATED))
        return added

    async def mark_published(self, version_id: str, channel: Channel) -> None:
        before = await self.inner.by_id(version_id)
        await self.inner.mark_published(version_id, channel)
        if before is not None and (not before.published or before.channel != channel):
            await self.journal.of_product(
                before.product_id, "version.published", "version", version_id,
                named({"label": (None, before.label),
                       "channel": (before.channel.value if before.published else None,
                                   channel.value)}))

    async def withdraw(self, version_id: str, at: int) -> bool:
        before = await self.inner.by_id(version_id)
        withdrawn = await self.inner.withdraw(version_id, at)
        if withdrawn and before is not None:
            await self.journal.of_product(before.product_id, "version.withdrawn", "version",
                                          version_id, named({"withdrawn_at": (None, at)}))
        return withdrawn


class AuditedImages(_Layer):
    inner: Images

    async def add(self, image: ProductImage, data: bytes,
                  most: int) -> ProductImage | ImageRefused:
        added = await self.inner.add(image, data, most)
        if isinstance(added, ProductImage):
            await self.journal.of_product(image.product_id, "product.image_added", "image",
                                          added.id, changes(None, added, r.IMAGE_SHOWN,
                                                            r.CREATED))
        return added

    async def remove(self, product_id: str, image_id: str) -> bool:
        removed = await self.inner.remove(product_id, image_id)
        if removed:
            await self.journal.of_product(product_id, "product.image_removed", "image",
                                          image_id)
        return removed

    async def set_alt(self, product_id: str, image_id: str, alt: str) -> ProductImage | None:
        before = {i.id: i for i in await self.inner.of_product(product_id)}.get(image_id)
        after = await self.inner.set_alt(product_id, image_id, alt)
        if before is not None and after is not None and before.alt != after.alt:
            await self.journal.of_product(product_id, "product.image_described", "image",
                                          image_id, changes(before, after, r.IMAGE_SHOWN))
        return after

    async def set_order(self, product_id: str,
                        image_ids: Sequence[str]) -> Sequence[ProductImage]:
        before = [i.id for i in await self.inner.of_product(product_id)]
        after = await self.inner.set_order(product_id, image_ids)
        if before != [i.id for i in after]:
            await self.journal.of_product(product_id, "product.images_ordered", "product",
                                          product_id,
                                          named({"images": (tuple(before),
                                                            tuple(i.id for i in after))}))
        return after


class AuditedApiKeys(_Layer):
    inner: ApiKeys

    async def add(self, key: ApiKey) -> None:
        await self.inner.add(key)
        await self.journal.add(key.studio_id, "api_key.issued", "api_key", key.id,
                               changes(None, key, r.KEY_SHOWN,
                                       r.CREATED | {"digest", "last_used_at"}))

    async def revoke(self, key_id: str, now: int) -> bool:
        before = await self.inner.by_id(key_id)
        revoked = await self.inner.revoke(key_id, now)
        if revoked and before is not None:
            await self.journal.add(before.studio_id, "api_key.revoked", "api_key", key_id,
                                   named({"client_id": (None, before.client_id)}))
        return revoked

    async def revoke_all_of_client(self, client_id: str, now: int) -> int:
        count = await self.inner.revoke_all_of_client(client_id, now)
        if count:
            await self.journal.add(None, "app.keys_revoked", "app", client_id,
                                   named({"revoked_keys": (None, count)}))
        return count

    async def revoke_all_of_account(self, account_id: str, now: int,
                                    studio_id: str | None = None) -> int:
        count = await self.inner.revoke_all_of_account(account_id, now, studio_id)
        if count:
            await self.journal.add(studio_id, "account.keys_revoked", "account", account_id,
                                   named({"revoked_keys": (None, count)}))
        return count


class AuditedClients(_Layer):
    inner: Clients

    async def add(self, client: Client) -> bool:
        added = await self.inner.add(client)
        if added:
            await self.journal.add(None, "app.registered", "app", client.id,
                                   changes(None, client, r.CLIENT_SHOWN, r.CREATED))
        return added

    async def set_disabled(self, client_id: str, disabled: bool) -> bool:
        before = await self.inner.by_id(client_id)
        done = await self.inner.set_disabled(client_id, disabled)
        if done and before is not None and before.disabled != disabled:
            await self.journal.add(None, "app.disabled" if disabled else "app.enabled", "app",
                                   client_id, named({"disabled": (before.disabled, disabled)}))
        return done

    async def describe(self, client: Client) -> bool:
        before = await self.inner.by_id(client.id)
        done = await self.inner.describe(client)
        told = () if before is None else changes(before, client, r.CLIENT_SHOWN, r.CREATED)
        if done and told:
            await self.journal.add(None, "app.changed", "app", client.id, told)
        return done


class AuditedAccounts(_Layer):
    inner: Accounts

    async def add(self, account: Account) -> bool:
        added = await self.inner.add(account)
        if added:
            await self.journal.add(None, "account.created", "account", account.id,
                                   changes(None, account, r.ACCOUNT_SHOWN, r.CREATED))
        return added

    async def set_password(self, account_id: str, digest: str | None) -> bool:
        done = await self.inner.set_password(account_id, digest)
        if done:
            await self.journal.add(None, "account.password_set" if digest is not None
                                   else "account.password_removed", "account", account_id,
                                   (Change("password", shown=False),))
        return done

    async def set_disabled(self, account_id: str, disabled_at: int | None) -> bool:
        before = await self.inner.by_id(account_id)
        done = await self.inner.set_disabled(account_id, disabled_at)
        if done and before is not None and before.disabled_at != disabled_at:
            action = "account.enabled" if disabled_at is None else "account.disabled"
            await self.journal.add(None, action, "account", account_id,
                                   named({"disabled_at": (before.disabled_at, disabled_at)}))
        return done


class AuditedStudios(_Layer):
    inner: Studios

    async def add(self, studio: Studio) -> bool:
        added = await self.inner.add(studio)
        if added:
            await self.journal.add(studio.id, "studio.created", "studio", studio.id,
                                   changes(None, studio, r.STUDIO_SHOWN, r.CREATED))
        return added

    async def put_membership(self, membership: Membership) -> None:
        before = await self.inner.membership(membership.studio_id, membership.account_id)
        await self.inner.put_membership(membership)
        old = None if before is None else before.permissions
        if old != membership.permissions:
            action = "collaborator.added" if before is None else "collaborator.changed"
            await self.journal.add(membership.studio_id, action, "account",
                                   membership.account_id,
                                   named({"permissions": (old, membership.permissions)}))

    async def remove_membership(self, studio_id: str, account_id: str) -> bool:
        before = await self.inner.membership(studio_id, account_id)
        removed = await self.inner.remove_membership(studio_id, account_id)
        if removed and before is not None:
            await self.journal.add(studio_id, "collaborator.removed", "account", account_id,
                                   named({"permissions": (before.permissions, None)}))
        return removed


class AuditedBlacklist(_Layer):
    inner: Blacklist

    async def set(self, studio_id: str, platform_id: str, on: bool, now: int) -> None:
        was = await self.inner.contains(studio_id, platform_id)
        await self.inner.set(studio_id, platform_id, on, now)
        if was != on:
            await self.journal.add(studio_id, "blacklist.added" if on else "blacklist.removed",
                                   "user", platform_id, named({"blacklisted": (was, on)}))


class AuditedHooks(_Layer):
    inner: Hooks

    async def add_endpoint(self, endpoint: WebhookEndpoint) -> None:
        await self.inner.add_endpoint(endpoint)
        await self.journal.add(endpoint.studio_id, "webhook.added", "webhook", endpoint.id,
                               changes(None, endpoint, r.WEBHOOK_SHOWN, r.WEBHOOK_QUIET))

    async def save_endpoint(self, endpoint: WebhookEndpoint) -> None:
        before = await self.inner.endpoint(endpoint.id)
        await self.inner.save_endpoint(endpoint)
        told = () if before is None else changes(before, endpoint, r.WEBHOOK_SHOWN,
                                                 r.WEBHOOK_QUIET)
        if before is None or not told:
            return
        await self.journal.add(endpoint.studio_id, _webhook_action(before, endpoint),
                               "webhook", endpoint.id, told)

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        before = await self.inner.endpoint(endpoint_id)
        removed = await self.inner.remove_endpoint(endpoint_id)
        if removed and before is not None:
            await self.journal.add(before.studio_id, "webhook.removed", "webhook", endpoint_id,
                                   named({"url": (before.url, None)}))
        return removed

    async def set_roles(self, product_id: str, roles: Sequence[ChatRole]) -> None:
        before = tuple(f"{x.guild_id}/{x.role_id}" for x in await self.inner.roles_of(product_id))
        await self.inner.set_roles(product_id, roles)
        after = tuple(f"{x.guild_id}/{x.role_id}" for x in roles)
        if sorted(before) != sorted(after):
            await self.journal.of_product(product_id, "product.chat_roles_changed", "product",
                                          product_id, named({"chat_roles": (before, after)}))


def _webhook_action(before: WebhookEndpoint, after: WebhookEndpoint) -> str:
    if before.secret_ciphertext != after.secret_ciphertext:
        return "webhook.secret_rotated"
    if before.disabled_at != after.disabled_at:
        return "webhook.enabled" if after.disabled_at is None else "webhook.disabled"
    return "webhook.changed"


class AuditedOutbox(_Layer):
    inner: Outbox

    async def requeue(self, message_id: str, now: int) -> bool:
        requeued = await self.inner.requeue(message_id, now)
        message = await self.inner.by_id(message_id) if requeued else None
        if message is not None:
            await self.journal.add(message.studio_id, "delivery.resent", "delivery",
                                   message_id, named({"topic": (None, message.topic)}))
        return requeued


class AuditedRuntime(_Layer):
    inner: RuntimeRecords

    async def reset_places(self, license_id: str) -> int:
        count = await self.inner.reset_places(license_id)
        if count:
            await self.journal.of_license(license_id, "license.places_reset", "license",
                                          license_id, named({"places": (count, 0)}))
        return count
