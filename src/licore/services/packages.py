"""Packages: a product's build files and its protection settings (contract 4)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from licore import validation as v
from licore.builds.errors import ModelFormatError
from licore.builds.prepare import check_protection, stored_scripts
from licore.builds.tree import Model
from licore.errors import AlreadyExists, InvalidRequest, NotFound, PayloadTooLarge
from licore.model import ApiKey, Product, Version
from licore.ports import UnitOfWork
from licore.protection import (
    ProtectionProblem,
    ProtectionSettings,
    ProtectionSettingsError,
    parse_protection_settings,
)
from licore.services.deps import Deps, iso
from licore.services.partner import own_product, page_args, with_cursor

PLACEHOLDER = re.compile(r"[A-Za-z0-9_]{4,64}")
UNLOCK_DATA_MAX = 64 * 1024
SETTINGS_FIELDS = ("product_id", "placeholder", "verify_scripts", "unlock_data", "protection")
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def package_view(p: Product, versions: list[str] | None = None) -> dict[str, Any]:
    view: dict[str, Any] = {"product_id": p.id, "slug": p.slug, "title": p.title,
                            "current_version": p.current_version}
    if versions is not None:
        view["versions"] = versions
    view.update(placeholder=p.placeholder, verify_scripts=p.verify_scripts)
    return view


def version_view(ver: Version, product: Product) -> dict[str, Any]:
    return {"id": ver.id, "version": ver.label, "size_bytes": ver.size_bytes,
            "sha256": ver.sha256, "live": ver.id == product.current_version_id,
            "published": ver.published, "created_at": iso(ver.created_at),
            "format": ver.format}


async def list_packages(deps: Deps, key: ApiKey, query: Any) -> dict[str, Any]:
    limit, cursor = page_args(query)
    assert key.studio_id is not None
    async with deps.storage.unit_of_work() as uow:
        page = await uow.products.of_studio(key.studio_id, limit, cursor)
        labels = [[v.label for v in (await uow.versions.of_product(p.id, False, None, None)).items]
                  for p in page.items]
    return with_cursor({"packages": [package_view(p, n) for p, n in zip(
        page.items, labels, strict=True)]}, page, limit)


async def list_versions(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> dict[str, Any]:
    """GET /packages/versions?product_id=: drafts too, newest last."""
    limit, cursor = page_args(query)
    product_id = query.get("product_id")
    if not product_id:
        raise InvalidRequest("product_id is required", "product_id")
    async with deps.storage.unit_of_work() as uow:
        product = await own_product(uow, key.studio_id, product_id)
        page = await uow.versions.of_product(product_id, False, limit, cursor)
    return with_cursor({"versions": [version_view(x, product) for x in page.items]},
                       page, limit)


def _read_model(deps: Deps, data: bytes) -> Model:
    try:
        return deps.models.read(data)
    except ModelFormatError as error:
        raise InvalidRequest(f"the file is not a valid model: {error.reason}", "body") from None
    except RecursionError:
        raise InvalidRequest("the file is not a valid model: nested too deeply",
                             "body") from None


async def upload_version(deps: Deps, key: ApiKey, query: Mapping[str, str],
                         data: bytes) -> dict[str, Any]:
    """POST /packages/versions?product_id=&version=LABEL with the file as the body."""
    product_id = query.get("product_id")
    if not product_id:
        raise InvalidRequest("product_id is required", "product_id")
    label = query.get("version")
    if not label or not LABEL.fullmatch(label):
        raise InvalidRequest("version must be 1 to 64 letters, digits, dots, dashes, "
                             "underscores or pluses, starting with a letter or digit", "version")
    if len(data) > deps.settings.max_upload_bytes:
        raise PayloadTooLarge(f"the file is larger than {deps.settings.max_upload_bytes} bytes")
    if not data:
        raise InvalidRequest("the body must be the model file", "body")
    async with deps.storage.unit_of_work() as uow:
        await own_product(uow, key.studio_id, product_id)  # before any parsing work
    model = await deps.offload(lambda: _read_model(deps, data))
    now = deps.clock.now()
    version = Version(id=deps.new_id("ver"), product_id=product_id, label=label,
                      format=model.format, size_bytes=len(data),
                      sha256=hashlib.sha256(data).hexdigest(), blob_id=deps.new_id("blb"),
                      published=False, created_at=now)
    async with deps.storage.unit_of_work() as uow:
        product = await own_product(uow, key.studio_id, product_id)
        if not await uow.versions.add(version, data, stored_scripts(version.id, model)):
            raise AlreadyExists(f"version {label} already exists for this product")
    return {"ok": True, "version": version_view(version, product)}


def _problems_text(problems: list[ProtectionProblem]) -> str:
    shown = "; ".join(f"{p.path}{f' line {p.line}' if p.line else ''}: {p.message}"
                      for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return shown + more


async def _check_rules(deps: Deps, data: bytes, settings: ProtectionSettings,
                       what: str) -> None:
    """Refuse rules that cannot be applied to every script of the build in `data`. Runs
    outside any transaction: parsing a large build must not hold the database."""

    def problems() -> list[ProtectionProblem]:
        return check_protection(deps.models.read(data), settings, deps.protector)

    found = await deps.offload(problems)
    if found:
        raise InvalidRequest(f"{what}: the protection rules cannot be applied safely: "
                             f"{_problems_text(found)}", "protection")


async def _live_data(uow: UnitOfWork, product: Product) -> tuple[Version, bytes] | None:
    if product.current_version_id is None:
        return None
    live = await uow.versions.by_id(product.current_version_id)
    return None if live is None else (live, await uow.versions.data(live))


async def publish(deps: Deps, key: ApiKey, body: object) -> dict[str, Any]:
    """POST /packages/publish {product_id, version_id}: that version goes live, once the
    seller's protection rules are known to apply to every script in it."""
    obj = v.require_object(body)
    v.refuse_unknown(obj, ("product_id", "version_id"))
    product_id = v.identifier(obj, "product_id")
    version_id = v.identifier(obj, "version_id")
    async with deps.storage.unit_of_work() as uow:
        product = await own_product(uow, key.studio_id, product_id)
        version = await uow.versions.by_id(version_id)
        if version is None or version.product_id != product_id:
            raise NotFound("no such version")
        data = await uow.versions.data(version)
    settings = parse_protection_settings(json.loads(product.protection))
    await _check_rules(deps, data, settings, f"version {version.label}")
    async with deps.storage.unit_of_work() as uow:
        current = await own_product(uow, key.studio_id, product_id)
        if current.protection != product.protection:
            raise InvalidRequest("the protection rules changed while publishing; try again",
                                 "protection")
        product = attrs.evolve(current, current_version_id=version.id,
                               current_version=version.label, updated_at=deps.clock.now())
        await uow.products.save(product)
        await uow.versions.mark_published(version.id)
        version = attrs.evolve(version, published=True)
    return {"ok": True, **package_view(product), "version": version_view(version, product)}


def _protection(value: object) -> str:
    """Checked by the rule parser (schema in docs/protection.md), stored as sent."""
    try:
        parse_protection_settings(value)
    except ProtectionSettingsError as error:
        raise InvalidRequest(f"{error.field}: {error.reason}", error.field) from None
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


async def settings(deps: Deps, key: ApiKey, body: object) -> dict[str, Any]:
    """POST /packages/settings: placeholder, "Verify scripts", unlock_data, protection."""
    obj = v.require_object(body)
    v.refuse_unknown(obj, SETTINGS_FIELDS)
    product_id = v.identifier(obj, "product_id")
    changes: dict[str, Any] = {}
    placeholder = v.text(obj, "placeholder", max_len=64)
    if placeholder is not None:
        if not PLACEHOLDER.fullmatch(placeholder):
            raise InvalidRequest("placeholder must be 4 to 64 letters, digits or underscores",
                                 "placeholder")
        changes["placeholder"] = placeholder
    verify = v.boolean(obj, "verify_scripts")
    if verify is not None:
        changes["verify_scripts"] = verify
    if "unlock_data" in obj:
        text = json.dumps(obj["unlock_data"], separators=(",", ":"), ensure_ascii=False)
        if len(text.encode()) > UNLOCK_DATA_MAX:
            raise InvalidRequest(f"unlock_data must be at most {UNLOCK_DATA_MAX} bytes of JSON",
                                 "unlock_data")
        changes["unlock_data"] = text
    if "protection" in obj:
        changes["protection"] = _protection(obj["protection"])
    async with deps.storage.unit_of_work() as uow:
        product = await own_product(uow, key.studio_id, product_id)
        live = await _live_data(uow, product) if "protection" in changes else None
    if live is not None:
        rules = parse_protection_settings(json.loads(changes["protection"]))
        await _check_rules(deps, live[1], rules, f"live version {live[0].label}")
    async with deps.storage.unit_of_work() as uow:
        product = await own_product(uow, key.studio_id, product_id)
        if live is not None and product.current_version_id != live[0].id:
            raise InvalidRequest("the live version changed while the rules were checked; "
                                 "try again", "protection")
        product = attrs.evolve(product, **changes, updated_at=deps.clock.now())
        await uow.products.save(product)
        if {"protection", "placeholder"} & changes.keys():
            # Copies made under the old rules or token are stale.
            await uow.copies.drop(product_id=product.id)
    return {"ok": True, **package_view(product), "unlock_data": json.loads(product.unlock_data),
            "protection": json.loads(product.protection)}
