"""The seller dashboard's use cases. A person acts for a studio they belong to, and every
action is checked against their permission in that studio. To someone outside the studio its
pages do not exist (`not_found`, as the Partner API answers for another studio's data)."""

from __future__ import annotations

from typing import Any

import attrs

from licore import scopes as sc
from licore.errors import LicoreError, NotFound
from licore.licenses import LicenseEvent
from licore.model import Alert, ApiKey, License, Product, Studio, Version
from licore.ports import ConnectedApp
from licore.protection import Trace
from licore.scopes import Permission
from licore.services import builds, device, operator, packages, partner
from licore.services.deps import Deps

ALERTS_SHOWN = 200
STUDIO_SCOPES = tuple(s for s, (kind, _) in sc.SCOPES.items() if kind is sc.KeyKind.STUDIO)


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

    def require(self, permission: Permission) -> None:
        if permission not in self.permissions:
            raise MissingPermission(permission)

    @property
    def is_owner(self) -> bool:
        return self.studio.owner_account_id == self.account_id

    def acting_key(self, now: int) -> ApiKey:
        """The acting identity the Partner API use cases take, for this seat: the studio,
        with the scopes this person's permissions could grant an app, never more. It is never
        stored and has no secret; it only lets the dashboard share the API's rules."""
        granted = sc.Grantable(self.permissions).filter(STUDIO_SCOPES)
        return ApiKey(id="dashboard", digest="", kind=sc.KeyKind.STUDIO, scopes=granted,
                      client_id="dashboard", account_id=self.account_id,
                      studio_id=self.studio.id, created_at=now, last_used_at=now)


async def seats_of(deps: Deps, account_id: str) -> list[Seat]:
    """Every studio the person belongs to, by name."""
    async with deps.storage.unit_of_work() as uow:
        seats = []
        for membership in await uow.studios.memberships_of(account_id):
            studio = await uow.studios.by_id(membership.studio_id)
            if studio is not None:
                seats.append(Seat(studio, account_id, membership.permissions))
    return sorted(seats, key=lambda s: s.studio.name.casefold())


async def take_seat(deps: Deps, account_id: str, studio_id: str) -> Seat:
    async with deps.storage.unit_of_work() as uow:
        membership = await uow.studios.membership(studio_id, account_id)
        studio = await uow.studios.by_id(studio_id) if membership else None
    if membership is None or studio is None:
        raise NotFound("no such studio")
    return Seat(studio, account_id, membership.permissions)


# reading -----------------------------------------------------------------------------------


@attrs.frozen
class StudioOverview:
    products: tuple[Product, ...]
    # None where the seat lacks the permission to see it.
    alerts: tuple[Alert, ...] | None
    blacklist: tuple[tuple[str, int], ...] | None
    apps: tuple[ConnectedApp, ...]


async def overview(deps: Deps, seat: Seat) -> StudioOverview:
    sees_licenses = seat.may(Permission.MANAGE_LICENSES)
    async with deps.storage.unit_of_work() as uow:
        products = (await uow.products.of_studio(seat.studio.id, None, None)).items
        alerts = blacklist = None
        if sees_licenses:
            found = (await uow.alerts.of_studio(seat.studio.id, None, None, None)).items
            # Newest first: the one seen most recently leads.
            alerts = tuple(sorted(found, key=lambda a: (a.last_seen_at, a.id),
                                  reverse=True)[:ALERTS_SHOWN])
            blacklist = tuple(await uow.blacklist.of_studio(seat.studio.id))
    apps = tuple(await device.connected_apps(deps, studio_id=seat.studio.id))
    return StudioOverview(products, alerts, blacklist, apps)


@attrs.frozen
class ProductDetail:
    product: Product
    licenses: tuple[License, ...] | None  # None without the manage_licenses permission
    versions: tuple[Version, ...] = ()  # every upload, drafts too, oldest first


async def product_detail(deps: Deps, seat: Seat, product_id: str) -> ProductDetail:
    async with deps.storage.unit_of_work() as uow:
        product = await partner.own_product(uow, seat.studio.id, product_id)
        licenses = None
        if seat.may(Permission.MANAGE_LICENSES):
            licenses = (await uow.licenses.of_product(product_id, None, None)).items
        versions = (await uow.versions.of_product(product_id, False, None, None)).items
    return ProductDetail(product, licenses, versions)


# changing ----------------------------------------------------------------------------------


async def save_product(deps: Deps, seat: Seat, body: dict[str, Any]) -> dict[str, Any]:
    """Create (no `id`) or change a product, with the Partner API's rules."""
    seat.require(Permission.MANAGE_PRODUCTS)
    return await partner.save_product(deps, seat.acting_key(deps.clock.now()), body)


async def save_settings(deps: Deps, seat: Seat, body: dict[str, Any]) -> dict[str, Any]:
    """Placeholder, "Verify scripts", unlock data and protection rules (contract 4)."""
    seat.require(Permission.MANAGE_PRODUCTS)
    return await packages.settings(deps, seat.acting_key(deps.clock.now()), body)


async def upload_version(deps: Deps, seat: Seat, product_id: str, label: str,
                         data: bytes) -> dict[str, Any]:
    """A new draft version, checked by parsing, as `POST /packages/versions`."""
    seat.require(Permission.MANAGE_PRODUCTS)
    query = {"product_id": product_id, "version": label.strip()}
    return await packages.upload_version(deps, seat.acting_key(deps.clock.now()), query, data)


async def publish(deps: Deps, seat: Seat, product_id: str, version_id: str) -> dict[str, Any]:
    """Make a version live once the protection rules apply to it, as `POST /packages/publish`."""
    seat.require(Permission.MANAGE_PRODUCTS)
    return await packages.publish(deps, seat.acting_key(deps.clock.now()),
                                  {"product_id": product_id, "version_id": version_id})


async def trace_leak(deps: Deps, seat: Seat, product_id: str, name: str,
                     data: bytes) -> tuple[Trace, License] | None:
    """Which of the product's licenses a leaked file was made for, and that license."""
    seat.require(Permission.MANAGE_LICENSES)
    found = await builds.trace_leak(deps, seat.studio.id, product_id, name, data)
    if found is None:
        return None
    async with deps.storage.unit_of_work() as uow:
        license = await uow.licenses.by_id(found.license_id)
    assert license is not None
    return found, license


async def change_license(deps: Deps, seat: Seat, product_id: str, user: str,
                         event: LicenseEvent) -> License:
    """Grant, revoke, pause or resume, by the license table."""
    seat.require(Permission.MANAGE_LICENSES)
    product_id, user = partner.parse_license_target({"product_id": product_id, "user": user})
    return await partner.change_license(deps, seat.studio.id, product_id, user, event)


async def set_blacklisted(deps: Deps, seat: Seat, platform_id: str, on: bool) -> None:
    seat.require(Permission.MANAGE_LICENSES)
    await operator.set_blacklisted(deps, seat.studio.id, platform_id.strip(), on)


def permissions_for(scopes: tuple[str, ...]) -> frozenset[Permission]:
    """The studio permissions an approver needs to grant these scopes."""
    return frozenset(p for s in scopes if (p := sc.SCOPES[s][1]) is not None)


async def revoke_app(deps: Deps, seat: Seat, key_id: str) -> None:
    """Revoke a key acting for the studio; effective on its next request. A person may revoke
    what they could have approved: a key whose scopes their permissions cover."""
    apps = await device.connected_apps(deps, studio_id=seat.studio.id)
    app = next((a for a in apps if a.key.id == key_id), None)
    if app is None:
        raise NotFound("no such connected app")
    for needed in sorted(permissions_for(app.key.scopes), key=lambda p: p.value):
        seat.require(needed)
    await device.revoke_connected_app(deps, key_id, studio_id=seat.studio.id)

