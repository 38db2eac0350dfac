"""Build files on their way to buyers: the library's versions and downloads (spec 4.4), and
the prepared copy both a download and `/update` hand out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from licore import licenses as lic
from licore.builds.errors import ModelFormatError
from licore.builds.prepare import buyer_copy, script_texts
from licore.errors import InvalidRequest, LicoreError, NotFound
from licore.model import ApiKey, License, Product, Version
from licore.ports import UnitOfWork
from licore.protection import Candidate, ProtectionFailed, Trace, parse_protection_settings
from licore.services.deps import Deps, iso


class PreparationFailed(LicoreError):
    """The copy could not be prepared (a rule failed on a script); nothing is handed out."""

    error = "server_error"
    status = 500


@attrs.frozen
class Download:
    data: bytes
    version: str  # the label, for X-Service-Version
    format: str


def license_secret(deps: Deps, license: License) -> bytes:
    """What makes one buyer's protected copy differ from another's: stable for the license
    across re-keys, and unknowable without the server's key."""
    return deps.vault.lookup_digest(f"protect|{license.id}").encode()


async def prepared_copy(deps: Deps, license: License, product: Product, version: Version,
                        license_key: str) -> bytes:
    """The buyer's own copy of `version`, made once and then served from the cache."""
    async with deps.storage.unit_of_work() as uow:
        cached = await uow.copies.get(version.id, license.id, license.key_generation)
        if cached is not None:
            return cached
        data = await uow.versions.data(version)
    settings = parse_protection_settings(json.loads(product.protection))

    def prepare() -> bytes:
        model = deps.models.read(data)
        buyer_copy(model, product.placeholder, license_key, settings, deps.protector,
                   license_secret(deps, license))
        return deps.models.write(model)

    try:
        copy = await deps.offload(prepare)
    except ProtectionFailed:
        raise PreparationFailed("the build could not be prepared; the seller has been "
                                "asked to republish it") from None
    async with deps.storage.unit_of_work() as uow:
        # Keep it only if the license is still the one it was made for.
        now = await uow.licenses.by_id(license.id)
        if now is not None and now.key_generation == license.key_generation and (
                lic.passes_runtime(now.state)):
            await uow.copies.put(version.id, license.id, license.key_generation, copy)
    return copy


async def _library_license(uow: UnitOfWork, key: ApiKey, product_id: str) -> License:
    account = await uow.accounts.by_id(key.account_id)
    if account is None:
        raise NotFound("the account behind this key is gone")
    license = await uow.licenses.for_user(product_id, account.platform_id)
    if license is None or not lic.passes_runtime(license.state):
        raise NotFound("no such product in your library")
    return license


def library_version_view(v: Version, product: Product) -> dict[str, Any]:
    return {"id": v.id, "version": v.label, "size_bytes": v.size_bytes, "sha256": v.sha256,
            "live": v.id == product.current_version_id, "created_at": iso(v.created_at)}


async def library_versions(uow: UnitOfWork, key: ApiKey, product_id: str,
                           limit: int | None, cursor: str | None) -> tuple[Product, Any]:
    await _library_license(uow, key, product_id)
    product = await uow.products.by_id(product_id)
    if product is None:
        raise NotFound("no such product in your library")
    return product, await uow.versions.of_product(product_id, True, limit, cursor)


async def download(deps: Deps, key: ApiKey, query: Mapping[str, str]) -> Download:
    """GET /library/download: the live build, or the named published one, as the buyer's
    own copy (key injected, rules applied)."""
    product_id = query.get("product_id")
    if not product_id:
        raise InvalidRequest("product_id is required", "product_id")
    version_id = query.get("version_id")
    if version_id is not None and not version_id:
        raise InvalidRequest("version_id must not be empty", "version_id")
    async with deps.storage.unit_of_work() as uow:
        license = await _library_license(uow, key, product_id)
        product = await uow.products.by_id(product_id)
        wanted = version_id or (product.current_version_id if product else None)
        version = await uow.versions.by_id(wanted) if wanted else None
    if product is None or version is None or version.product_id != product_id or not (
            version.published):
        raise NotFound("no such version" if version_id else "the product has no live build")
    if license.key_ciphertext is None:
        raise NotFound("no such product in your library")
    license_key = deps.vault.decrypt(license.key_ciphertext, license.id)
    data = await prepared_copy(deps, license, product, version, license_key)
    return Download(data, version.label, version.format)


SCRIPT_SUFFIXES = (".luau", ".lua")


def leaked_scripts(deps: Deps, name: str, data: bytes) -> list[tuple[str, str]]:
    """The (path, source) scripts of a leaked file: the file itself when it is named as a
    Luau script, else every script of a model file (either format, told apart by content)."""
    if name.lower().endswith(SCRIPT_SUFFIXES):
        return [(name, data.decode("utf-8", errors="replace"))]
    try:
        model = deps.models.read(data)
    except ModelFormatError as error:
        raise InvalidRequest(f"{name} is neither a model file nor a .luau or .lua script "
                             f"({error.reason})", "file") from None
    return [(where, text) for where, _, text in script_texts(model) if text is not None]


async def trace_leak(deps: Deps, studio_id: str | None, product_id: str, name: str,
                     data: bytes) -> Trace | None:
    """Which license of the product a leaked file was made for, with the evidence. Every
    license the product ever had is a candidate, revoked ones too (a copy may have leaked
    before): the secret its copies were made with, and its key where it still has one.
    `studio_id` None is the operator, who may trace any product."""
    async with deps.storage.unit_of_work() as uow:
        product = await uow.products.by_id(product_id)
        if product is None or (studio_id is not None and product.studio_id != studio_id):
            raise NotFound("no such product")
        licenses = (await uow.licenses.of_product(product_id, None, None)).items
    scripts = leaked_scripts(deps, name, data)
    candidates = [
        Candidate(lic.id, license_secret(deps, lic),
                  None if lic.key_ciphertext is None
                  else deps.vault.decrypt(lic.key_ciphertext, lic.id).encode())
        for lic in licenses]
    return await deps.offload(lambda: deps.protector.trace(scripts, candidates))
