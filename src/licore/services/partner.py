"""The Partner API use cases (spec 4.2 to 4.4, contract 3). Every query is scoped to the
key's acting identity; another studio's data is `not_found`, never 403."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from licore import licenses as lic
from licore import products as prod
from licore import tokens
from licore import validation as v
from licore.errors import AlreadyOwned, InvalidRequest, NotFound
from licore.licenses import LicenseEvent, LicenseState, Source
from licore.model import Alert, ApiKey, License, Page, Product
from licore.ports import LibraryEntry, UnitOfWork
from licore.services.builds import library_version_view, library_versions
from licore.services.deps import Deps, iso

LIMIT_MAX = 1000


def page_args(query: Mapping[str, str]) -> tuple[int | None, str | None]:
    """`limit` (1..1000) and `cursor` of every list (contract 3, extension)."""
    limit: int | None = None
    raw = query.get("limit")
    if raw is not None:
        if not raw.isdigit() or not 1 <= int(raw) <= LIMIT_MAX:
            raise InvalidRequest(f"limit must be a whole number from 1 to {LIMIT_MAX}", "limit")
        limit = int(raw)
    cursor = query.get("cursor")
    if cursor is not None and (not cursor or len(cursor) > 100):
        raise InvalidRequest("cursor is malformed", "cursor")
    return limit, cursor


def with_cursor(body: dict[str, Any], page: Page[Any], limit: int | None) -> dict[str, Any]:
    if limit is not None:
        body["next_cursor"] = page.next_cursor
    return body


# products ---------------------------------------------------------------------------------


def product_view(p: Product) -> dict[str, Any]:
    return {"id": p.id, "slug": p.slug, "title": p.title, "tagline": p.tagline,
            "price_credit": p.price_credit, "discoverable": p.discoverable,
            "licensing_enabled": p.licensing_enabled, "current_version": p.current_version}


async def list_products(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
    limit, cursor = page_args(query)
    assert key.studio_id is not None
    async with deps.storage.unit_of_work() as uow:
        page = await uow.products.of_studio(key.studio_id, limit, cursor)
    return with_cursor({"products": [product_view(p) for p in page.items]}, page, limit)


async def own_product(uow: UnitOfWork, key_studio: str | None, product_id: str) -> Product:
    product = await uow.products.by_id(product_id)
    if product is None or product.studio_id != key_studio:
        raise NotFound("no such product")
    return product


async def save_product(deps: Deps, key: ApiKey, body: object) -> dict[str, Any]:
    """POST /products: a create without `id`, a change with it."""
    obj = v.require_object(body)
    assert key.studio_id is not None
    now = deps.clock.now()
    if "id" not in obj:
        fields = prod.parse_create(obj)
        assert fields.title is not None
        draft = Product(
            id=deps.new_id("prd"), studio_id=key.studio_id, slug="", title=fields.title,
            tagline=fields.tagline or "", description=fields.description or "",
            price_credit=fields.price_credit or 0, discoverable=False,
            licensing_enabled=True, created_at=now, updated_at=now)
        async with deps.storage.unit_of_work() as uow:
            product = await uow.products.add(draft, prod.slug_base(fields.title))
    else:
        product_id = v.identifier(obj, "id")
        fields = prod.parse_change(obj)
        async with deps.storage.unit_of_work() as uow:
            current = await own_product(uow, key.studio_id, product_id)
            changes = {k: val for k, val in attrs.asdict(fields).items() if val is not None}
            if fields.discoverable is not None:
                changes["discoverable"] = prod.next_discoverable(current.discoverable,
                                                                 fields.discoverable)
            product = attrs.evolve(current, **changes, updated_at=now)
            await uow.products.save(product)
    return {"ok": True, "id": product.id, "slug": product.slug,
            "discoverable": product.discoverable}


# licenses ---------------------------------------------------------------------------------


def license_view(lc: License) -> dict[str, Any]:
    return {"id": lc.id, "platform_id": lc.platform_id, "verified_at": iso(lc.verified_at),
            "is_active": lc.state is LicenseState.ACTIVE, "source": lc.source.value,
            "state": lc.state.value}


async def list_licenses(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
    product_id = query.get("product_id")
    if not product_id:
        raise InvalidRequest("product_id is required", "product_id")
    limit, cursor = page_args(query)
    async with deps.storage.unit_of_work() as uow:
        await own_product(uow, key.studio_id, product_id)
        page = await uow.licenses.of_product(product_id, limit, cursor)
    return with_cursor({"licenses": [license_view(lc) for lc in page.items]}, page, limit)


async def resolve_user(uow: UnitOfWork, user: str) -> str:
    """All digits is a platform id; anything else a username from the user directory."""
    if user.isdigit():
        return user
    account = await uow.accounts.by_username(user)
    if account is None:
        raise NotFound("no user with that name")
    return account.platform_id


def parse_license_target(body: object, *, extra: tuple[str, ...] = ()) -> tuple[str, str]:
    obj = v.require_object(body)
    v.refuse_unknown(obj, ("product_id", "user", *extra))
    product_id = v.identifier(obj, "product_id")
    user = v.identifier(obj, "user")
    if not user.isdigit() and len(user) > 64:
        raise InvalidRequest("user must be a username or a numeric platform id", "user")
    return product_id, user


def _mint(deps: Deps, license: License) -> License:
    key = tokens.make_license_key(deps.random.token_bytes(48))
    return attrs.evolve(
        license, key_ciphertext=deps.vault.encrypt(key, license.id),
        key_digest=deps.vault.lookup_digest(key), key_generation=license.key_generation + 1)


async def change_license(deps: Deps, studio_id: str | None, product_id: str, user: str,
                         event: LicenseEvent, source: Source = Source.GRANT) -> License:
    """One license transition as one unit of work, by the table in `licore.licenses`."""
    now = deps.clock.now()
    async with deps.storage.unit_of_work() as uow:
        await own_product(uow, studio_id, product_id)
        platform_id = await resolve_user(uow, user)
        current = await uow.licenses.for_user(product_id, platform_id)
        state = current.state if current else LicenseState.NONE
        outcome = lic.transition(state, event)
        if current is None:
            fresh = License(id=deps.new_id("lic"), product_id=product_id,
                            platform_id=platform_id, source=source,
                            state=outcome.next, verified_at=now, created_at=now)
            fresh = _mint(deps, fresh)
            if not await uow.licenses.add(fresh):
                raise AlreadyOwned("the user already holds a license for this product")
            return fresh
        updated = attrs.evolve(current, state=outcome.next)
        if outcome.effect in (lic.MINT_KEY, lic.CLEAR_KEY):
            # Prepared copies carry the old key: a new key or none makes them void.
            await uow.copies.drop(license_id=current.id)
        if outcome.effect == lic.MINT_KEY:
            updated = _mint(deps, attrs.evolve(updated, source=source, verified_at=now))
        elif outcome.effect == lic.CLEAR_KEY:
            updated = attrs.evolve(updated, key_ciphertext=None, key_digest=None)
        elif outcome.effect == lic.REVERIFY:
            updated = attrs.evolve(updated, verified_at=now)
        if updated != current and not await uow.licenses.replace(updated, expected=state):
            if event is LicenseEvent.GRANT:
                raise AlreadyOwned("the user already holds a license for this product")
            raise NotFound("the license changed while this request ran; try again")
        return updated


async def grant(deps: Deps, key: ApiKey, body: object) -> dict[str, Any]:
    product_id, user = parse_license_target(body)
    license = await change_license(deps, key.studio_id, product_id, user,
                                   LicenseEvent.GRANT)
    return {"ok": True, "license": license_view(license)}


async def revoke(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
    product_id, user = query.get("product_id"), query.get("user")
    if not product_id:
        raise InvalidRequest("product_id is required", "product_id")
    if not user:
        raise InvalidRequest("user is required", "user")
    await change_license(deps, key.studio_id, product_id, user, LicenseEvent.REVOKE)
    return {"ok": True}


async def pause_or_resume(deps: Deps, key: ApiKey, body: object,
                          event: LicenseEvent) -> dict[str, Any]:
    product_id, user = parse_license_target(body)
    await change_license(deps, key.studio_id, product_id, user, event)
    return {"ok": True}


# library ----------------------------------------------------------------------------------


def library_view(entry: LibraryEntry) -> dict[str, Any]:
    p = entry.product
    return {"id": p.id, "slug": p.slug, "title": p.title, "studio": entry.studio_name,
            "current_version": p.current_version, "acquired_at": iso(entry.license.created_at)}


async def library(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
    limit, cursor = page_args(query)
    async with deps.storage.unit_of_work() as uow:
        account = await uow.accounts.by_id(key.account_id)
        if account is None:
            raise NotFound("the account behind this key is gone")
        if query.get("versions") is not None:
            return await _versions(uow, key, query, limit, cursor)
        page = await uow.licenses.library_of(account.platform_id, limit, cursor)
    return with_cursor({"products": [library_view(e) for e in page.items]}, page, limit)


async def _versions(uow: UnitOfWork, key: ApiKey, query: Mapping[str, str],
                    limit: int | None, cursor: str | None) -> dict[str, Any]:
    if query.get("versions") != "1":
        raise InvalidRequest("versions must be 1", "versions")
    product_id = query.get("product_id")
    if not product_id:
        raise InvalidRequest("product_id is required with versions=1", "product_id")
    product, page = await library_versions(uow, key, product_id, limit, cursor)
    return with_cursor({"versions": [library_version_view(v, product) for v in page.items]},
                       page, limit)


# alerts -----------------------------------------------------------------------------------


def alert_view(a: Alert) -> dict[str, Any]:
    return {"id": a.id, "kind": a.kind, "product_id": a.product_id, "license_id": a.license_id,
            "platform_id": a.platform_id, "key_owner_platform_id": a.key_owner_platform_id,
            "game_id": a.game_id, "script_name": a.script_name, "count": a.count,
            "first_seen_at": iso(a.first_seen_at), "last_seen_at": iso(a.last_seen_at)}


async def alerts(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
    limit, cursor = page_args(query)
    product_id = query.get("product_id")
    assert key.studio_id is not None
    async with deps.storage.unit_of_work() as uow:
        if product_id:
            await own_product(uow, key.studio_id, product_id)
        page = await uow.alerts.of_studio(key.studio_id, product_id or None, limit, cursor)
    return with_cursor({"alerts": [alert_view(a) for a in page.items]}, page, limit)
