"""Packages: a product's build files and its protection settings (contract 4)."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from licore import validation as v
from licore.errors import InvalidRequest
from licore.model import ApiKey
from licore.protection import ProtectionSettingsError, parse_protection_settings
from licore.services.deps import Deps
from licore.services.partner import own_product, page_args, with_cursor

PLACEHOLDER = re.compile(r"[A-Za-z0-9_]{4,64}")
UNLOCK_DATA_MAX = 64 * 1024
SETTINGS_FIELDS = ("product_id", "placeholder", "verify_scripts", "unlock_data", "protection")


def package_view(p: Any) -> dict[str, Any]:
    return {"product_id": p.id, "slug": p.slug, "title": p.title,
            "current_version": p.current_version, "placeholder": p.placeholder,
            "verify_scripts": p.verify_scripts}


async def list_packages(deps: Deps, key: ApiKey, query: Any) -> dict[str, Any]:
    limit, cursor = page_args(query)
    assert key.studio_id is not None
    async with deps.storage.transaction() as tx:
        page = await tx.products_of_studio(key.studio_id, limit, cursor)
    return with_cursor({"packages": [package_view(p) for p in page.items]}, page, limit)


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
    async with deps.storage.transaction() as tx:
        product = await own_product(tx, key.studio_id, product_id)
        product = attrs.evolve(product, **changes, updated_at=deps.clock.now())
        await tx.save_product(product)
    return {"ok": True, **package_view(product), "unlock_data": json.loads(product.unlock_data),
            "protection": json.loads(product.protection)}
