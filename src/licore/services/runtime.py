"""The Runtime API use cases (spec 4.5, contract 5). Each call is one unit of work: rate
counters, the facts (one query), and the effects (nonce, place, alerts) commit together."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from licore import runtime as rt
from licore.builds.nodes import to_nodes
from licore.errors import InvalidRequest, RateLimited
from licore.model import Alert
from licore.ports import UnitOfWork
from licore.runtime import AlertDraft, Caller, Facts
from licore.sealing import seal
from licore.services.builds import prepared_copy
from licore.services.deps import Deps
from licore.services.limits import WINDOW

ID_MAX = 200


class Malformed(InvalidRequest):
    """A runtime request of the wrong shape: HTTP 400 with exactly the failure body."""

    def __init__(self, field: str) -> None:
        super().__init__(f"{field} is missing or malformed", field)


def _user_id(value: object) -> str:
    # A string or a number (spec 4.5); either way a whole, non-negative platform id.
    if isinstance(value, bool):
        raise Malformed("user_id")
    if isinstance(value, int) and value >= 0:
        return str(value)
    if isinstance(value, str) and value.isdigit() and value.isascii() and len(value) <= 20:
        return value
    raise Malformed("user_id")


def _game_id(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and 0 < len(value) <= ID_MAX:
        return value
    raise Malformed("game_id")


def _text(body: Mapping[str, Any], name: str, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > ID_MAX:
        raise Malformed(name)
    return value


def parse_caller(body: object, *, with_game: bool = True) -> Caller:
    if not isinstance(body, dict):
        raise Malformed("body")
    key = _text(body, "key")
    product_id = _text(body, "product_id")
    assert key is not None and product_id is not None
    return Caller(_user_id(body.get("user_id")), product_id, key,
                  _game_id(body.get("game_id")) if with_game else None)


def parse_nonce(body: Mapping[str, Any]) -> str:
    nonce = body.get("nonce")
    if not rt.nonce_ok(nonce):
        raise Malformed("nonce")
    assert isinstance(nonce, str)
    return nonce


async def _store_alerts(deps: Deps, uow: UnitOfWork, facts: Facts,
                        drafts: tuple[AlertDraft, ...] | list[AlertDraft]) -> None:
    if not drafts or facts.product is None:
        return
    now = deps.clock.now()
    for d in drafts:
        await uow.alerts.record(Alert(
            id=deps.new_id("alr"), studio_id=facts.product.studio_id, kind=d.kind,
            product_id=facts.product.id, license_id=d.license_id, platform_id=d.platform_id,
            key_owner_platform_id=d.key_owner_platform_id, game_id=d.game_id,
            script_name=d.script_name, count=1, first_seen_at=now, last_seen_at=now),
            deps.settings.alert_window)


@attrs.frozen
class Judged:
    ok: bool
    facts: Facts


async def _count_and_read(deps: Deps, caller: Caller, ip: str) -> Facts:
    """Count the request against the per-key and per-IP limits and load the key's facts."""
    digest = deps.vault.lookup_digest(caller.key)
    now = deps.clock.now()
    start = now - now % WINDOW
    (per_key, per_ip), facts = await deps.storage.runtime_read(
        [f"rk:{digest}", f"rip:{ip}"], start, digest, caller.user_id, caller.game_id)
    s = deps.settings
    if per_key > s.runtime_key_rate_limit or per_ip > s.runtime_ip_rate_limit:
        raise RateLimited(max(1, start + WINDOW - now))
    return facts


async def judge(deps: Deps, caller: Caller, ip: str, nonce: str | None = None) -> Judged:
    """The shared license check. The hot path is one trip (count the request, load the
    facts); the effects (place, nonce, alerts) commit together only when there are any."""
    facts = await _count_and_read(deps, caller, ip)
    now = deps.clock.now()
    verdict = rt.judge(caller, facts)
    lic = facts.license
    alerts = list(verdict.alerts)
    place = verdict.ok and lic is not None and rt.new_place(caller, facts)
    if verdict.ok and lic is not None:
        alert = rt.place_alert(caller, lic.id, facts)
        alerts += [alert] if alert else []
    fresh = True
    if not alerts and not place and verdict.ok and nonce is not None and lic is not None:
        # The common sealed call: its one effect joins other requests' in one statement.
        fresh = await deps.storage.use_nonce(lic.id, nonce, now + rt.NONCE_MEMORY, now)
    elif alerts or place or (verdict.ok and nonce is not None):
        async with deps.storage.unit_of_work() as uow:
            if place and lic is not None and caller.game_id is not None:
                await uow.runtime.record_place(lic.id, caller.game_id, now)
            if verdict.ok and nonce is not None and lic is not None:
                fresh = await uow.runtime.use_nonce(lic.id, nonce, now + rt.NONCE_MEMORY, now)
            await _store_alerts(deps, uow, facts, alerts)
    return Judged(verdict.ok and fresh, facts)


async def check(deps: Deps, body: object, ip: str) -> dict[str, Any]:
    judged = await judge(deps, parse_caller(body), ip)
    return {"success": judged.ok}


FAIL = {"ok": False}


async def unlock(deps: Deps, body: object, ip: str) -> dict[str, Any]:
    caller = parse_caller(body)
    assert isinstance(body, dict)
    nonce = parse_nonce(body)
    judged = await judge(deps, caller, ip, nonce)
    lic, product = judged.facts.license, judged.facts.product
    if not judged.ok or lic is None or product is None or lic.key_ciphertext is None:
        return FAIL
    exp = deps.clock.now() + rt.UNLOCK_VALIDITY
    # `exp` rides inside the sealed payload too, so a tampered outer `exp` is detectable.
    payload = {"nonce": nonce, "data": json.loads(product.unlock_data), "exp": exp}
    sealed = seal(caller.key, nonce, json.dumps(payload, separators=(",", ":")).encode())
    return {"ok": True, "exp": exp, "cipher": sealed.cipher, "tag": sealed.tag}


async def version(deps: Deps, body: object, ip: str) -> dict[str, Any]:
    caller = parse_caller(body, with_game=False)
    assert isinstance(body, dict)
    current = _text(body, "current", required=False)
    judged = await judge(deps, caller, ip)
    product = judged.facts.product
    if not judged.ok or product is None:
        return FAIL
    return {"ok": True, "latest": product.current_version or "",
            "update": rt.wants_update(product.current_version, current),
            "fileId": product.current_version_id or ""}


def _seal(key: str, nonce: str, payload: dict[str, Any]) -> dict[str, str]:
    sealed = seal(key, nonce, json.dumps(payload, separators=(",", ":"),
                                         ensure_ascii=False).encode())
    return {"cipher": sealed.cipher, "tag": sealed.tag}


async def update(deps: Deps, body: object, ip: str) -> dict[str, Any]:
    """POST /update: the buyer's protected copy of the live build as Instance nodes, sealed;
    `update` false (and no instances) when the caller already holds the live version."""
    caller = parse_caller(body, with_game=False)
    assert isinstance(body, dict)
    nonce = parse_nonce(body)
    current = _text(body, "current", required=False)
    judged = await judge(deps, caller, ip, nonce)
    lic, product = judged.facts.license, judged.facts.product
    if not judged.ok or lic is None or product is None or product.current_version_id is None:
        return FAIL
    label = product.current_version or ""
    wanted = rt.wants_update(product.current_version, current)
    instances: list[Any] = []
    if wanted:
        async with deps.storage.unit_of_work() as uow:
            version = await uow.versions.by_id(product.current_version_id)
        if version is None:
            return FAIL
        copy = await prepared_copy(deps, lic, product, version, caller.key)
        instances = await deps.offload(lambda: to_nodes(deps.models.read(copy)))
    payload = {"nonce": nonce, "version": label, "instances": instances}
    return {"ok": True, "version": label, "update": wanted, **_seal(caller.key, nonce, payload)}


SOURCE_MAX = 4 * 1024 * 1024


async def verify_source(deps: Deps, body: object, ip: str) -> dict[str, Any]:
    """POST /verify-source: `{ok: true}` only when all five conditions of spec 4.5 hold."""
    caller = parse_caller(body, with_game=False)
    assert isinstance(body, dict)
    name = _text(body, "script_name")
    source = body.get("source")
    if not isinstance(source, str) or len(source) > SOURCE_MAX:
        raise Malformed("source")
    assert name is not None
    key_facts = await _count_and_read(deps, caller, ip)
    async with deps.storage.unit_of_work() as uow:
        product = await uow.products.by_id(caller.product_id)
        mine = await uow.licenses.for_user(caller.product_id, caller.user_id) if product else None
        blacklisted = bool(product) and await uow.blacklist.contains(
            product.studio_id if product else "", caller.user_id)
        stored: tuple[bytes, ...] = ()
        if product is not None and product.current_version_id is not None:
            scripts = await uow.versions.scripts(product.current_version_id, name)
            stored = tuple(sc.source for sc in scripts)
    facts = rt.SourceFacts(product, key_facts.license, mine, blacklisted, stored)
    verdict = rt.verify_source(caller, name, source.encode("utf-8", "surrogatepass"), facts)
    if verdict.alerts and product is not None:
        async with deps.storage.unit_of_work() as uow:
            await _store_alerts(deps, uow, Facts(None, product, 0, False), verdict.alerts)
    return {"ok": verdict.ok}
