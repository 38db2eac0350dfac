"""The Partner API's one door into the core (spec 4.2 to 4.4): each call is one
`Partner.call(operation, bearer, command, note)`.

An operation names the scope the specification's table gives the call and the use case it
runs; `call` authenticates the key (its kind and scope, the per-key limit: `Keys`), only
then asks the adapter for the call's command (so a bad key is answered before a bad body,
as before), and runs the use case acting for the key's studio or person. Who may do what
is decided here and in `Keys`, never by the HTTP adapter: a studio's data is reached only
through `Caller.studio`, and every use case scopes its queries to the studio it acts for
(another studio's product is `not_found`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import attrs

from licore import commands as c
from licore import images as im
from licore import license_commands as lc
from licore.audit import Actor, ActorKind, AuditEntry, acting
from licore.errors import LicenseRevoked
from licore.events import ChatRole, Message, MessageKind, WebhookEndpoint
from licore.licenses import LicenseEvent
from licore.model import Alert, License, Page, Place, Product
from licore.ports import LibraryEntry
from licore.services.audit import AuditTrail
from licore.services.builds import Download
from licore.services.claims import Claim, ClaimResult, Claims
from licore.services.idempotency import Idempotency, Once, Outcome
from licore.services.images import ProductImages
from licore.services.keys import Caller, Keys, Note
from licore.services.library import Library, VersionList
from licore.services.license_lifecycle import (
    Granted,
    LicenseLifecycle,
    LicensePolicy,
    Transferred,
)
from licore.services.licensing import Licensing
from licore.services.packages import Package, Packages, ProductVersion, SettingsChanged
from licore.services.products import Products
from licore.services.usage import Usage
from licore.services.webhooks import Shown, Webhooks
from licore.usage import Series, UsageOf

C = TypeVar("C")
R = TypeVar("R")
T = TypeVar("T")


@attrs.frozen
class AsOf(Generic[T]):
    """A value with the time it was read at: a license's status and whether it is in
    force depend on the clock (`licore.licenses.status`, `in_force`), which the writer of
    the answer does not read."""

    value: T
    now: int
    grace_days: int | None = None  # the product's grace, where the answer shows it


@attrs.frozen
class Operation(Generic[C, R]):
    scope: str
    run: Callable[[Partner, Caller, C], Awaitable[R]]


@attrs.frozen
class Partner:
    keys: Keys
    products: Products
    licensing: Licensing
    library: Library
    claims: Claims
    packages: Packages
    webhooks: Webhooks
    lifecycle: LicenseLifecycle  # licore's license shapes (docs/licenses.md)
    once: Idempotency  # calls sent with an Idempotency-Key (docs/api.md)
    usage: Usage  # usage over time (docs/api.md, "Usage")
    images: ProductImages  # product images (docs/api.md, an extension)
    audit: AuditTrail  # the audit trail (docs/audit.md)

    def as_of(self, value: T) -> AsOf[T]:
        return AsOf(value, self.lifecycle.clock.now())

    async def call(self, operation: Operation[C, R], bearer: str | None,
                   command: Callable[[], Awaitable[C]], note: Note) -> R:
        """The call's answer, or the specification's error: authenticate, read the
        command, run the use case."""
        caller = await self.keys.authenticate(bearer, operation.scope, note)
        with acting(_app(caller)):
            return await operation.run(self, caller, await command())

    async def call_once(self, operation: Operation[C, R], bearer: str | None,
                        command: Callable[[], Awaitable[C]], note: Note,
                        once: Once) -> Outcome:
        """`call` sent with an Idempotency-Key: the answer of the call's one run, kept for
        the key (`services.idempotency`). The key belongs to the caller's studio (a library
        key's: its person), whichever of its API keys sends it, so a retry survives a key
        rotation and two studios' keys never meet."""
        caller = await self.keys.authenticate(bearer, operation.scope, note)
        key = once.checked_key()
        cmd = await command()
        owner = (f"studio:{caller.key.studio_id}" if caller.key.studio_id is not None
                 else f"person:{caller.key.account_id}")
        with acting(_app(caller)):
            return await self.once.run(owner, key, once.fingerprint(),
                                       lambda: operation.run(self, caller, cmd), once.answer)


def _app(caller: Caller) -> Actor:
    """Who the audit trail names for a call: the app, and the key it called with."""
    return Actor(ActorKind.APP, caller.key.client_id, caller.key.id)


async def _as_of(p: Partner, running: Awaitable[T]) -> AsOf[T]:
    return p.as_of(await running)


# The operations, in the order of the specification's sections ----------------------------

LIST_PRODUCTS = Operation[c.ListProducts, Page[Product]](
    "products:read", lambda p, who, cmd: p.products.list(who.studio, cmd))


async def _save_product(p: Partner, who: Caller,
                        cmd: c.CreateProduct | c.ChangeProduct) -> Product:
    """A create without `id`, a change with it (spec 4.2)."""
    if isinstance(cmd, c.ChangeProduct):
        return await p.products.change(who.studio, cmd)
    return await p.products.create(who.studio, cmd)


SAVE_PRODUCT = Operation[c.CreateProduct | c.ChangeProduct, Product]("products:write",
                                                                      _save_product)


async def _list_licenses(p: Partner, who: Caller, cmd: c.ListLicenses) -> AsOf[Page[License]]:
    found = await p.licensing.list(who.studio, cmd)
    policy = await p.lifecycle.policy(who.studio, cmd.product_id)
    return AsOf(found, p.lifecycle.clock.now(), policy.product.grace_days)


LIST_LICENSES = Operation[c.ListLicenses, AsOf[Page[License]]]("licenses:read",
                                                               _list_licenses)


def change_license(event: LicenseEvent) -> Operation[c.LicenseTarget, License]:
    return Operation[c.LicenseTarget, License](
        "licenses:write",
        lambda p, who, target: p.lifecycle.change(who.studio, c.ChangeLicense(target, event)))




async def _grant(p: Partner, who: Caller, cmd: lc.GrantLicense) -> AsOf[Granted]:
    """The specification's grant; an end and a tier are licore's (docs/licenses.md). A
    license already held is answered `409 already_owned` by the edge, from the value, not
    an exception: the purchase recorded against it must commit with a keyed call too."""
    return p.as_of(await p.lifecycle.grant_recorded(who.studio, cmd))


GRANT = Operation[lc.GrantLicense, AsOf[Granted]]("licenses:write", _grant)
REVOKE = change_license(LicenseEvent.REVOKE)
PAUSE = change_license(LicenseEvent.PAUSE)
RESUME = change_license(LicenseEvent.RESUME)
ALERTS = Operation[c.ListAlerts, Page[Alert]](
    "licenses:read", lambda p, who, cmd: p.licensing.alerts(who.studio, cmd))


async def _library(p: Partner, who: Caller,
                   cmd: c.ListLibrary | c.ListLibraryVersions
                   ) -> Page[LibraryEntry] | VersionList:
    """The person's products, or one product's versions (spec 4.4)."""
    if isinstance(cmd, c.ListLibraryVersions):
        return await p.library.versions(who.person, cmd)
    return await p.library.list(who.person, cmd)


LIBRARY = Operation[c.ListLibrary | c.ListLibraryVersions, Page[LibraryEntry] | VersionList](
    "library:read", _library)
# Claiming adds only what the platform says the person already bought, so the person's read
# scope covers it (docs/platform.md): no new scope in the specification's table.


async def _claim(p: Partner, who: Caller, cmd: c.ClaimPurchase) -> Claim:
    """A claim the seller's revoke refuses is an error, never `ok: true` (issue 27 item 6):
    nothing changed, and an app that reads only the status must not tell the buyer it
    worked. The person's own store page says the same in words."""
    done = await p.claims.claim(who.person, cmd)
    if done.result is ClaimResult.REVOKED:
        raise LicenseRevoked("the seller revoked your license of this product; owning the "
                             "pass does not bring it back")
    return done


CLAIM = Operation[c.ClaimPurchase, Claim]("library:read", _claim)
# A person takes a listed product's trial with the same scope as a claim: it adds to their
# library only what the seller offers anyone, once (docs/licenses.md, "Trials").
TAKE_TRIAL = Operation[lc.TakeTrial, AsOf[License]](
    "library:read", lambda p, who, cmd: _as_of(p, p.lifecycle.take_trial(who.person, cmd)))
# A holder's own re-key, with the read scope as their other library choices (docs/licenses.md,
# "Re-key"): it changes nothing but their own key.
REKEY_OWN = Operation[lc.RekeyOwn, AsOf[License]](
    "library:read", lambda p, who, cmd: _as_of(p, p.lifecycle.rekey_own(who.person, cmd)))
DOWNLOAD = Operation[c.DownloadCopy, Download](
    "library:download", lambda p, who, cmd: p.library.download(who.person, cmd))
LIST_PACKAGES = Operation[c.ListPackages, Page[Package]](
    "packages:read", lambda p, who, cmd: p.packages.list(who.studio, cmd))
LIST_VERSIONS = Operation[c.ListPackageVersions, VersionList](
    "packages:read", lambda p, who, cmd: p.packages.versions(who.studio, cmd))
UPLOAD = Operation[c.UploadVersion, ProductVersion](
    "packages:write", lambda p, who, cmd: p.packages.upload(who.studio, cmd))
PUBLISH = Operation[c.PublishVersion, ProductVersion](
    "packages:write", lambda p, who, cmd: p.packages.publish(who.studio, cmd))
WITHDRAW = Operation[c.WithdrawVersion, ProductVersion](
    "packages:write", lambda p, who, cmd: p.packages.withdraw(who.studio, cmd))
# Following a release channel is the person's own library choice, made with the read scope
# as claims and trials are (docs/api.md, "Release channels").
FOLLOW_CHANNEL = Operation[c.FollowChannel, License](
    "library:read", lambda p, who, cmd: p.library.follow(who.person, cmd))
SETTINGS = Operation[c.ChangeSettings, SettingsChanged](
    "packages:write", lambda p, who, cmd: p.packages.change_settings(who.studio, cmd))

# events (docs/events.md, an extension)
LIST_WEBHOOKS = Operation[None, Sequence[WebhookEndpoint]](
    "licenses:read", lambda p, who, _: p.webhooks.list(who.studio))
ADD_WEBHOOK = Operation[c.AddWebhook, Shown](
    "licenses:write", lambda p, who, cmd: p.webhooks.add(who.studio, cmd))
REMOVE_WEBHOOK = Operation[c.WebhookTarget, None](
    "licenses:write", lambda p, who, cmd: p.webhooks.remove(who.studio, cmd))
ROTATE_WEBHOOK = Operation[c.WebhookTarget, Shown](
    "licenses:write", lambda p, who, cmd: p.webhooks.rotate(who.studio, cmd))
ENABLE_WEBHOOK = Operation[c.WebhookTarget, WebhookEndpoint](
    "licenses:write", lambda p, who, cmd: p.webhooks.enable(who.studio, cmd))
RESEND = Operation[c.WebhookTarget, Message](
    "licenses:write", lambda p, who, cmd: p.webhooks.resend(who.studio, cmd))


def deliveries(kind: MessageKind) -> Operation[c.ListDeliveries, Page[Message]]:
    return Operation[c.ListDeliveries, Page[Message]](
        "licenses:read", lambda p, who, cmd: p.webhooks.deliveries(who.studio, kind, cmd))


CHAT_ROLES = Operation[c.ChatRolesOf, Sequence[ChatRole]](
    "products:read", lambda p, who, cmd: p.webhooks.roles(who.studio, cmd.product_id))
SET_CHAT_ROLES = Operation[c.SetChatRoles, Sequence[ChatRole]](
    "products:write", lambda p, who, cmd: p.webhooks.set_roles(who.studio, cmd))

# product images (docs/api.md, an extension): the scopes a product's other edits need
IMAGES = Operation[im.ImagesOf, tuple[im.ProductImage, ...]](
    "products:read", lambda p, who, cmd: p.images.list(who.studio, cmd))
ADD_IMAGE = Operation[im.AddImage, im.ProductImage](
    "products:write", lambda p, who, cmd: p.images.add(who.studio, cmd))
REMOVE_IMAGE = Operation[im.RemoveImage, None](
    "products:write", lambda p, who, cmd: p.images.remove(who.studio, cmd))
DESCRIBE_IMAGE = Operation[im.DescribeImage, im.ProductImage](
    "products:write", lambda p, who, cmd: p.images.describe(who.studio, cmd))
ORDER_IMAGES = Operation[im.OrderImages, tuple[im.ProductImage, ...]](
    "products:write", lambda p, who, cmd: p.images.order(who.studio, cmd))


# the audit trail (docs/audit.md, an extension); the read scope the webhooks' and places'
# lists use, since the trail tells of licenses, keys and webhooks alike
AUDIT = Operation[c.ListAudit, Page[AuditEntry]](
    "licenses:read", lambda p, who, cmd: p.audit.list(who.studio, cmd))


# licore's license shapes (docs/licenses.md, extensions) ----------------------------------


def _timed(run: Callable[[LicenseLifecycle, Caller, C], Awaitable[R]]
           ) -> Callable[[Partner, Caller, C], Awaitable[AsOf[R]]]:
    async def timed(p: Partner, who: Caller, cmd: C) -> AsOf[R]:
        return p.as_of(await run(p.lifecycle, who, cmd))

    return timed


TRANSFER = Operation[lc.TransferLicense, AsOf[Transferred]](
    "licenses:write", _timed(lambda life, who, cmd: life.transfer(who.studio, cmd)))
RENEW = Operation[lc.RenewLicense, AsOf[License]](
    "licenses:write", _timed(lambda life, who, cmd: life.renew(who.studio, cmd)))
START_TRIAL = Operation[c.LicenseTarget, AsOf[License]](
    "licenses:write", _timed(lambda life, who, cmd: life.start_trial(who.studio, cmd)))
REKEY = Operation[c.LicenseTarget, AsOf[License]](
    "licenses:write", _timed(lambda life, who, cmd: life.rekey(who.studio, cmd)))
SET_TIER = Operation[lc.SetTier, AsOf[License]](
    "licenses:write", _timed(lambda life, who, cmd: life.set_tier(who.studio, cmd)))
PLACES = Operation[c.LicenseTarget, Sequence[Place]](
    "licenses:read", lambda p, who, cmd: p.lifecycle.places(who.studio, cmd))
RESET_PLACES = Operation[c.LicenseTarget, int](
    "licenses:write", lambda p, who, cmd: p.lifecycle.reset_places(who.studio, cmd))
POLICY = Operation[lc.PolicyOf, LicensePolicy](
    "products:read", lambda p, who, cmd: p.lifecycle.policy(who.studio, cmd.product_id))
SET_POLICY = Operation[lc.SetLicensePolicy, LicensePolicy](
    "products:write", lambda p, who, cmd: p.lifecycle.set_policy(who.studio, cmd))
# Usage over time (docs/api.md, "Usage"): what the studio's products are, read with the
# scope that reads them.
USAGE = Operation[UsageOf, Series](
    "products:read", lambda p, who, cmd: p.usage.series(who.studio, cmd))
