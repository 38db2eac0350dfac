"""The seller dashboard's use cases. A person acts for a studio they belong to, and every
action is checked against their permission in that studio; then the same use case an app's
key would reach runs, acting for the studio (`ActingStudio`). To someone outside the studio
its pages do not exist (`not_found`, as the Partner API answers for another studio's data)."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from licore import licenses as lic
from licore import scopes as sc
from licore import usage
from licore.actors import ActingStudio
from licore.audit import AuditEntry
from licore.commands import (
    AddWebhook,
    ChangeLicense,
    ChangeProduct,
    ChangeSettings,
    CreateProduct,
    LicenseTarget,
    ListAudit,
    ListDeliveries,
    Paging,
    PublishVersion,
    RoleName,
    UploadVersion,
    WebhookTarget,
    WithdrawVersion,
)
from licore.errors import InvalidRequest, LicoreError, NotFound
from licore.events import ChatRole, Message, MessageKind, WebhookEndpoint
from licore.images import (
    AddImage,
    DescribeImage,
    ImagesOf,
    OrderImages,
    ProductImage,
    RemoveImage,
    moved,
)
from licore.license_commands import (
    GrantLicense,
    RenewLicense,
    SetLicensePolicy,
    SetTier,
    TransferLicense,
)
from licore.licenses import LicenseEvent
from licore.model import Alert, License, Page, Place, Product, Studio, Version
from licore.ports import Clock, ConnectedApp
from licore.protection import Trace
from licore.scopes import Permission
from licore.services import operator
from licore.services.audit import AuditTrail
from licore.services.builds import Copies
from licore.services.images import ProductImages
from licore.services.keys import Keys
from licore.services.license_lifecycle import LicenseLifecycle, LicensePolicy, Transferred
from licore.services.licensing import Licensing, resolve_user
from licore.services.packages import Packages, ProductVersion, SettingsChanged
from licore.services.products import Products, own_product
from licore.services.usage import Usage
from licore.services.webhooks import Shown, Webhooks
from licore.storage_ports import Storage, UnitOfWork
from licore.usage import Series

ALERTS_SHOWN = 200
DELIVERIES_SHOWN = 20


class MissingPermission(LicoreError):
    code = "insufficient_permission"
    status = 403

    def __init__(self, permission: Permission) -> None:
        words = permission.value.replace("_", " ")
        super().__init__(f"this needs the {words} permission in the studio")
        self.permission = permission


@attrs.frozen
class Seat:
    """One person's place in one studio."""

    studio: Studio
    account_id: str
    permissions: frozenset[Permission]

    def may(self, permission: Permission) -> bool:
        return permission in self.permissions

    @property
    def is_owner(self) -> bool:
        return self.studio.owner_account_id == self.account_id

    def require(self, permission: Permission) -> ActingStudio:
        """The studio to act for, once the person is known to hold `permission` in it."""
        if permission not in self.permissions:
            raise MissingPermission(permission)
        return ActingStudio(self.studio.id)


@attrs.frozen
class StudioOverview:
    products: tuple[Product, ...]
    # None where the seat lacks the permission to see it.
    alerts: tuple[Alert, ...] | None
    blacklist: tuple[tuple[str, int], ...] | None
    apps: tuple[ConnectedApp, ...]
    # The status now (`licore.licenses.status`) of each alert's license, by license id:
    # what the alert rows show, so that an action taken on one is seen in it.
    alert_licenses: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class ProductDetail:
    product: Product
    licenses: tuple[License, ...] | None  # None without the manage_licenses permission
    versions: tuple[Version, ...] = ()  # every upload, drafts too, oldest first
    chat_roles: tuple[ChatRole, ...] = ()
    statuses: Mapping[str, str] = attrs.field(factory=dict)  # license id -> status now
    policy: LicensePolicy | None = None  # place limit and policy, trial, tiers
    images: tuple[ProductImage, ...] = ()  # in store order


@attrs.frozen
class LicenseDetail:
    """One license as its page shows it: its terms, its places and the product's tiers."""

    product: Product
    license: License
    status: str  # active, paused, expired or inactive (`licore.licenses.status`)
    places: tuple[Place, ...]
    policy: LicensePolicy


class AlertAction(enum.Enum):
    """What a seller may do from an alert's row; each is one use case."""

    REVOKE = "revoke"
    PAUSE = "pause"
    REKEY = "rekey"
    BLACKLIST = "blacklist"  # the user the call came from, as the blacklist form does


ALERT_EVENTS = {AlertAction.REVOKE: LicenseEvent.REVOKE, AlertAction.PAUSE: LicenseEvent.PAUSE}


@attrs.frozen
class AlertActed:
    alert: Alert
    subject: str  # the platform id acted on: the license's holder, or the blacklisted user


def shown_status(license: License, now: int, product: Product | None) -> str:
    """A license's status as the dashboard shows it: `in grace` for an active license past
    its end within its product's grace (docs/licenses.md, "Grace")."""
    grace = product.grace_days if product is not None else None
    if license.state is lic.LicenseState.ACTIVE and lic.in_grace(license, now, grace):
        return "in grace"
    return lic.status(license, now, grace)


@attrs.frozen
class AuditShown:
    page: Page[AuditEntry]
    names: Mapping[str, str]  # an account's, app's or product's id: its name


@attrs.frozen
class EventsOverview:
    """A studio's webhook endpoints and the latest deliveries and chat-role hand-outs."""

    endpoints: tuple[WebhookEndpoint, ...]
    deliveries: tuple[Message, ...]
    hand_outs: tuple[Message, ...]


def permissions_for(scopes: tuple[str, ...]) -> frozenset[Permission]:
    """The studio permissions an approver needs to grant these scopes."""
    return frozenset(p for s in scopes if (p := sc.SCOPES[s][1]) is not None)


@attrs.frozen
class Dashboard:
    storage: Storage
    clock: Clock
    products: Products
    licensing: Licensing
    packages: Packages
    copies: Copies
    webhooks: Webhooks
    keys: Keys
    lifecycle: LicenseLifecycle
    images: ProductImages

    async def seats_of(self, account_id: str) -> list[Seat]:
        """Every studio the person belongs to, by name."""
        async with self.storage.unit_of_work() as uow:
            seats = []
            for membership in await uow.studios.memberships_of(account_id):
                studio = await uow.studios.by_id(membership.studio_id)
                if studio is not None:
                    seats.append(Seat(studio, account_id, membership.permissions))
        return sorted(seats, key=lambda s: s.studio.name.casefold())

    async def take_seat(self, account_id: str, studio_id: str) -> Seat:
        async with self.storage.unit_of_work() as uow:
            membership = await uow.studios.membership(studio_id, account_id)
            studio = await uow.studios.by_id(studio_id) if membership else None
        if membership is None or studio is None:
            raise NotFound("no such studio")
        return Seat(studio, account_id, membership.permissions)

    # reading -------------------------------------------------------------------------------

    async def usage(self, seat: Seat, product_id: str | None,
                    days: int) -> tuple[Series, tuple[Product, ...]]:
        """The last `days` days of one product's usage, or the studio's, and the studio's
        products (to name them). Any member sees it, as they see the products."""
        query = usage.recent(self.clock.now(), days, product_id)
        found = await Usage(self.storage).series(ActingStudio(seat.studio.id), query)
        async with self.storage.unit_of_work() as uow:
            products = (await uow.products.of_studio(seat.studio.id, None, None)).items
        return found, tuple(products)

    async def overview(self, seat: Seat) -> StudioOverview:
        sees_licenses = seat.may(Permission.MANAGE_LICENSES)
        async with self.storage.unit_of_work() as uow:
            products = (await uow.products.of_studio(seat.studio.id, None, None)).items
            alerts = blacklist = None
            if sees_licenses:
                found = (await uow.abuse.alerts.of_studio(seat.studio.id, None, None, None)).items
                # Newest first: the one seen most recently leads.
                alerts = tuple(sorted(found, key=lambda a: (a.last_seen_at, a.id),
                                      reverse=True)[:ALERTS_SHOWN])
                blacklist = tuple(await uow.abuse.blacklist.of_studio(seat.studio.id))
                alert_licenses = await self._statuses_of(uow, alerts)
        apps = tuple(await self.keys.connected_apps(studio_id=seat.studio.id))
        return StudioOverview(products, alerts, blacklist, apps,
                              alert_licenses if sees_licenses else {})

    async def _statuses_of(self, uow: UnitOfWork, alerts: tuple[Alert, ...]
                           ) -> dict[str, str]:
        now = self.clock.now()
        held = await uow.licenses.by_ids({a.license_id for a in alerts
                                          if a.license_id is not None})
        graces = {p: (await uow.products.by_id(p)) for p in {x.product_id for x in held.values()}}
        return {license_id: shown_status(license, now, graces[license.product_id])
                for license_id, license in held.items()}

    async def product_detail(self, seat: Seat, product_id: str) -> ProductDetail:
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, ActingStudio(seat.studio.id), product_id)
            licenses = None
            if seat.may(Permission.MANAGE_LICENSES):
                licenses = (await uow.licenses.of_product(product_id, None, None)).items
            versions = (await uow.versions.of_product(product_id, False, None, None)).items
            roles = await uow.hooks.roles_of(product_id)
            images = tuple(await uow.images.of_product(product_id))
        now = self.clock.now()
        statuses = {x.id: shown_status(x, now, product) for x in licenses or ()}
        policy = await self.lifecycle.policy(ActingStudio(seat.studio.id), product_id)
        return ProductDetail(product, licenses, versions, tuple(roles), statuses, policy,
                             images)

    async def license_detail(self, seat: Seat, target: LicenseTarget) -> LicenseDetail:
        studio = seat.require(Permission.MANAGE_LICENSES)
        places = tuple(await self.lifecycle.places(studio, target))  # NotFound: no license
        policy = await self.lifecycle.policy(studio, target.product_id)
        async with self.storage.unit_of_work() as uow:
            platform_id = await resolve_user(uow, target.user, target.chat_user)
            license = await uow.licenses.for_user(target.product_id, platform_id)
        if license is None:
            raise NotFound("no license for that user and product")
        return LicenseDetail(policy.product, license,
                             shown_status(license, self.clock.now(), policy.product),
                             places, policy)

    async def audit(self, seat: Seat, command: ListAudit) -> AuditShown:
        """The studio's audit trail, for those who may manage its licenses (the trail tells
        of licenses, keys and webhooks; `GET /v1/audit` needs `licenses:read` alike), with
        the names of the people, apps and products it names by id."""
        trail = AuditTrail(self.storage)
        found = await trail.list(seat.require(Permission.MANAGE_LICENSES), command)
        return AuditShown(found, await trail.names(found.items))

    async def events(self, seat: Seat) -> EventsOverview | None:
        """None without the manage_licenses permission: events are mostly about licenses,
        and endpoints are managed with that permission (as with `licenses:write`)."""
        if not seat.may(Permission.MANAGE_LICENSES):
            return None
        studio, recent = ActingStudio(seat.studio.id), ListDeliveries(Paging(DELIVERIES_SHOWN))
        return EventsOverview(
            tuple(await self.webhooks.list(studio)),
            (await self.webhooks.deliveries(studio, MessageKind.WEBHOOK, recent)).items,
            (await self.webhooks.deliveries(studio, MessageKind.CHAT_ROLE, recent)).items)

    # changing ------------------------------------------------------------------------------

    async def create_product(self, seat: Seat, command: CreateProduct) -> Product:
        return await self.products.create(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def change_product(self, seat: Seat, command: ChangeProduct) -> Product:
        return await self.products.change(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def change_settings(self, seat: Seat, command: ChangeSettings) -> SettingsChanged:
        """Placeholder, "Verify scripts", unlock data and protection rules (contract 4)."""
        return await self.packages.change_settings(seat.require(Permission.MANAGE_PRODUCTS),
                                                   command)

    async def upload_version(self, seat: Seat, command: UploadVersion) -> ProductVersion:
        """A new draft version, checked by parsing, as `POST /packages/versions`."""
        return await self.packages.upload(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def publish(self, seat: Seat, command: PublishVersion) -> ProductVersion:
        """Make a version live once the protection rules apply to it."""
        return await self.packages.publish(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def add_image(self, seat: Seat, command: AddImage) -> ProductImage:
        """As `POST /v1/products/images`: checked, re-encoded, stored last."""
        return await self.images.add(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def remove_image(self, seat: Seat, command: RemoveImage) -> None:
        await self.images.remove(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def describe_image(self, seat: Seat, command: DescribeImage) -> ProductImage:
        """As `POST /v1/products/images/alt`."""
        return await self.images.describe(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def move_image(self, seat: Seat, target: RemoveImage, step: int) -> None:
        """One place earlier (-1) or later (1): the whole new order, as
        `POST /v1/products/images/order` takes it."""
        studio = seat.require(Permission.MANAGE_PRODUCTS)
        now = await self.images.list(studio, ImagesOf(target.product_id))
        if target.id not in {image.id for image in now}:
            raise NotFound("the product has no such image")
        await self.images.order(studio, OrderImages(target.product_id,
                                                    moved(now, target.id, step)))
    async def withdraw(self, seat: Seat, command: WithdrawVersion) -> ProductVersion:
        """Withdraw a published version, as `POST /packages/withdraw`."""
        return await self.packages.withdraw(seat.require(Permission.MANAGE_PRODUCTS), command)

    async def change_license(self, seat: Seat, command: ChangeLicense) -> License:
        """Grant, revoke, pause or resume, by the license table."""
        return await self.lifecycle.change(seat.require(Permission.MANAGE_LICENSES), command)

    # the license lifecycle (docs/licenses.md): the same use cases as `/v1/licenses/*` and
    # `/v1/products/policy`, with the permissions their scopes need.

    async def grant(self, seat: Seat, command: GrantLicense) -> License:
        """The grant with an end and a tier, as `POST /v1/licenses`."""
        return await self.lifecycle.grant(seat.require(Permission.MANAGE_LICENSES), command)

    async def transfer(self, seat: Seat, command: TransferLicense) -> Transferred:
        return await self.lifecycle.transfer(seat.require(Permission.MANAGE_LICENSES),
                                             command)

    async def renew(self, seat: Seat, command: RenewLicense) -> License:
        return await self.lifecycle.renew(seat.require(Permission.MANAGE_LICENSES), command)

    async def rekey(self, seat: Seat, target: LicenseTarget) -> License:
        return await self.lifecycle.rekey(seat.require(Permission.MANAGE_LICENSES), target)

    async def set_tier(self, seat: Seat, command: SetTier) -> License:
        return await self.lifecycle.set_tier(seat.require(Permission.MANAGE_LICENSES),
                                             command)

    async def reset_places(self, seat: Seat, target: LicenseTarget) -> int:
        return await self.lifecycle.reset_places(seat.require(Permission.MANAGE_LICENSES),
                                                 target)

    async def set_policy(self, seat: Seat, command: SetLicensePolicy) -> LicensePolicy:
        return await self.lifecycle.set_policy(seat.require(Permission.MANAGE_PRODUCTS),
                                               command)

    async def act_on_alert(self, seat: Seat, alert_id: str,
                           action: AlertAction) -> AlertActed:
        """Revoke, pause or re-key the alert's license, or blacklist the user the call came
        from: one use case, as the license and blacklist forms run it."""
        studio = seat.require(Permission.MANAGE_LICENSES)
        async with self.storage.unit_of_work() as uow:
            alert = await uow.abuse.alerts.by_id(studio.studio_id, alert_id)
            license = (await uow.licenses.by_id(alert.license_id)
                       if alert is not None and alert.license_id is not None else None)
        if alert is None:
            raise NotFound("no such alert")
        if action is AlertAction.BLACKLIST:
            if alert.platform_id is None:
                raise InvalidRequest("the call behind this alert sent no user id", "action")
            await self.set_blacklisted(seat, alert.platform_id, True)
            return AlertActed(alert, alert.platform_id)
        if license is None:
            raise InvalidRequest("this alert is about no license", "action")
        target = LicenseTarget(license.product_id, license.platform_id)
        if action is AlertAction.REKEY:
            await self.lifecycle.rekey(studio, target)
        else:
            await self.lifecycle.change(studio, ChangeLicense(target, ALERT_EVENTS[action]))
        return AlertActed(alert, license.platform_id)

    # events: the same use cases as `/v1/webhooks*` and `/v1/chat-roles*`, with the
    # permissions their scopes need (licenses:write, products:write).

    async def add_webhook(self, seat: Seat, command: AddWebhook) -> Shown:
        return await self.webhooks.add(seat.require(Permission.MANAGE_LICENSES), command)

    async def rotate_webhook(self, seat: Seat, target: WebhookTarget) -> Shown:
        return await self.webhooks.rotate(seat.require(Permission.MANAGE_LICENSES), target)

    async def remove_webhook(self, seat: Seat, target: WebhookTarget) -> None:
        await self.webhooks.remove(seat.require(Permission.MANAGE_LICENSES), target)

    async def enable_webhook(self, seat: Seat, target: WebhookTarget) -> WebhookEndpoint:
        return await self.webhooks.enable(seat.require(Permission.MANAGE_LICENSES), target)

    async def resend(self, seat: Seat, target: WebhookTarget) -> Message:
        return await self.webhooks.resend(seat.require(Permission.MANAGE_LICENSES), target)

    async def add_chat_role(self, seat: Seat, product_id: str,
                            role: RoleName) -> tuple[ChatRole, ...]:
        return tuple(await self.webhooks.add_role(seat.require(Permission.MANAGE_PRODUCTS),
                                                  product_id, role))

    async def remove_chat_role(self, seat: Seat, product_id: str,
                               role: RoleName) -> tuple[ChatRole, ...]:
        return tuple(await self.webhooks.remove_role(
            seat.require(Permission.MANAGE_PRODUCTS), product_id, role))

    async def trace_leak(self, seat: Seat, product_id: str, name: str,
                         data: bytes) -> tuple[Trace, License | None]:
        """Which of the product's licenses a leaked file was made for, and that license (None
        when it cannot be told; the trace's evidence says why)."""
        studio = seat.require(Permission.MANAGE_LICENSES)
        found = await self.copies.trace(studio.studio_id, product_id, name, data)
        if found.license_id is None:
            return found, None
        async with self.storage.unit_of_work() as uow:
            license = await uow.licenses.by_id(found.license_id)
        assert license is not None
        return found, license

    async def set_blacklisted(self, seat: Seat, platform_id: str, on: bool) -> None:
        studio = seat.require(Permission.MANAGE_LICENSES)
        await operator.set_blacklisted(self.storage, self.clock, studio.studio_id,
                                       platform_id.strip(), on)

    async def revoke_app(self, seat: Seat, key_id: str) -> None:
        """Revoke a key acting for the studio; effective on its next request. A person may
        revoke what they could have approved: a key whose scopes their permissions cover."""
        apps = await self.keys.connected_apps(studio_id=seat.studio.id)
        app = next((a for a in apps if a.key.id == key_id), None)
        if app is None:
            raise NotFound("no such connected app")
        for needed in sorted(permissions_for(app.key.scopes), key=lambda p: p.value):
            seat.require(needed)
        await self.keys.revoke_connected_app(key_id, studio_id=seat.studio.id)
