"""The Runtime API use cases (spec 4.5, contract 5). The hot path is one trip (count the
request, load the facts); the effects (nonce, place, alerts) commit together, in one unit of
work, only when there are any.

A denial is a value (False, or None for the sealed calls), never an exception: the HTTP
adapter answers every denial with the same failure body, so a game cannot learn which check
failed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from licore import releases
from licore import runtime as rt
from licore.builds.nodes import to_nodes
from licore.commands import AskVersion, Check, Unlock, Update, VerifySource
from licore.errors import RateLimited
from licore.events import Topic
from licore.model import Alert, License, Product, UnlockData, Version
from licore.ports import Clock, KeyVault, ModelCodec, Offload
from licore.releases import Channel
from licore.runtime import AlertDraft, Caller, Facts
from licore.sealing import Sealed, seal
from licore.services.announce import Announcer, alert_data
from licore.services.builds import Copies, nodes_context
from licore.services.ids import Ids
from licore.services.limits import WINDOW
from licore.storage_ports import Storage, UnitOfWork


def _channel(asked: str | None) -> Channel | None:
    return None if asked is None else Channel(asked)


def _verified_versions(product: Product | None, mine: License | None) -> list[str]:
    """The builds /verify-source compares with: the live one, and the beta build for a
    holder following beta (who runs it: comparing only with live would call their copy
    stolen)."""
    if product is None:
        return []
    offers = [product.current_version_id]
    if mine is not None and mine.channel is Channel.BETA:
        offers.append(product.beta_version_id)
    return [v for v in offers if v is not None]


@attrs.frozen
class RuntimeLimits:
    key_rate_limit: int = 600  # calls a license key may make a minute (contract 5)
    ip_rate_limit: int = 1200  # calls a client IP may make a minute
    alert_window: int = 3600  # repeats within it raise an alert's count (contract 3)


@attrs.frozen
class Unlocked:
    exp: int
    sealed: Sealed


@attrs.frozen
class LatestVersion:
    latest: str
    update: bool
    file_id: str


@attrs.frozen
class Updated:
    version: str
    update: bool
    sealed: Sealed


@attrs.frozen
class _Judged:
    ok: bool
    facts: Facts


def _unlock_plaintext(nonce: str, unlock_data: UnlockData, exp: int) -> bytes:
    """`{"nonce":..,"data":..,"exp":..}` with the seller's data spliced in as the compact JSON
    text it is kept as (never parsed and written again on every call)."""
    try:
        data = unlock_data.text.encode()
    except UnicodeEncodeError:  # text JSON cannot carry as UTF-8: let json escape it
        data = json.dumps(unlock_data.value()).encode()
    return b'{"nonce":%s,"data":%s,"exp":%d}' % (json.dumps(nonce).encode(), data, exp)


def _seal(key: str, nonce: str, payload: dict[str, Any]) -> Sealed:
    return seal(key, nonce, json.dumps(payload, separators=(",", ":"),
                                       ensure_ascii=False).encode())


@attrs.frozen
class Runtime:
    storage: Storage
    clock: Clock
    ids: Ids
    vault: KeyVault
    copies: Copies
    models: ModelCodec
    offload: Offload
    announce: Announcer
    limits: RuntimeLimits = RuntimeLimits()

    async def _store_alerts(self, uow: UnitOfWork, facts: Facts,
                            drafts: Sequence[AlertDraft]) -> None:
        if not drafts or facts.product is None:
            return
        now = self.clock.now()
        for d in drafts:
            fresh = self.ids.new("alr")
            stored = await uow.alerts.record(Alert(
                id=fresh, studio_id=facts.product.studio_id, kind=d.kind,
                product_id=facts.product.id, license_id=d.license_id,
                platform_id=d.platform_id, key_owner_platform_id=d.key_owner_platform_id,
                game_id=d.game_id, script_name=d.script_name, count=1, first_seen_at=now,
                last_seen_at=now), self.limits.alert_window)
            if stored.id == fresh:  # a new alert; a repeat only bumps the count
                await self.announce.event(uow, stored.studio_id, Topic.ALERT_RAISED,
                                          alert_data(stored))

    async def _count_and_read(self, caller: Caller, ip: str) -> Facts:
        """Count the request against the per-key and per-IP limits and load the key's
        facts."""
        digest = self.vault.lookup_digest(caller.key)
        now = self.clock.now()
        start = now - now % WINDOW
        (per_key, per_ip), facts = await self.storage.runtime_read(
            [f"rk:{digest}", f"rip:{ip}"], start, digest, caller.user_id, caller.game_id)
        if per_key > self.limits.key_rate_limit or per_ip > self.limits.ip_rate_limit:
            raise RateLimited(max(1, start + WINDOW - now))
        return facts

    async def _judge(self, caller: Caller, ip: str, nonce: str | None = None) -> _Judged:
        """The license check every call carrying a key shares: count and load, decide
        (pure, `licore.runtime.effects`), store what the decision leaves behind."""
        facts = await self._count_and_read(caller, ip)
        decided = rt.effects(caller, facts, nonce, self.clock.now())
        fresh = await self._store(decided, facts)  # a denial's alerts are stored too
        return _Judged(decided.ok and fresh, facts)

    async def _store(self, decided: rt.Effects, facts: Facts) -> bool:
        """Store a decision's effects; False when its nonce was spent before."""
        now = self.clock.now()
        lic, nonce = decided.license_id, decided.nonce
        if decided.only_nonce and lic is not None and nonce is not None:
            # The common sealed call: its one effect joins other requests' in one statement.
            return await self.storage.use_nonce(lic, nonce, now + rt.NONCE_MEMORY, now)
        if not decided.alerts and decided.place is None and nonce is None:
            return True
        fresh = True
        async with self.storage.unit_of_work() as uow:
            if decided.place is not None and lic is not None:
                await uow.runtime.record_place(lic, decided.place, now)
            if nonce is not None and lic is not None:
                fresh = await uow.runtime.use_nonce(lic, nonce, now + rt.NONCE_MEMORY, now)
            await self._store_alerts(uow, facts, decided.alerts)
        return fresh

    async def check(self, command: Check, ip: str) -> bool:
        """POST /check: whether the license passes (forgeable; non-critical checks only)."""
        return (await self._judge(command.caller, ip)).ok

    async def unlock(self, command: Unlock, ip: str) -> Unlocked | None:
        """POST /unlock: the seller's unlock payload sealed under the buyer's key."""
        judged = await self._judge(command.caller, ip, command.nonce)
        lic, product = judged.facts.license, judged.facts.product
        if not judged.ok or lic is None or product is None or lic.key_ciphertext is None:
            return None
        exp = self.clock.now() + rt.UNLOCK_VALIDITY
        # `exp` rides inside the sealed payload too, so a tampered outer `exp` is detectable.
        return Unlocked(exp, seal(command.key, command.nonce,
                                  _unlock_plaintext(command.nonce, rt.unlock_data(judged.facts),
                                                    exp)))

    async def version(self, command: AskVersion, ip: str) -> LatestVersion | None:
        """POST /version: the newest published label, and whether the caller should update."""
        judged = await self._judge(command.caller, ip)
        product = judged.facts.product
        if not judged.ok or product is None:
            return None
        offer = releases.offered(product, judged.facts.license, _channel(command.channel))
        return LatestVersion(offer.label or "", rt.wants_update(offer.label, command.current),
                             offer.version_id or "")

    async def update(self, command: Update, ip: str) -> Updated | None:
        """POST /update: the buyer's protected copy of the live build as Instance nodes,
        sealed; `update` false (and no instances) when the caller holds the live version."""
        judged = await self._judge(command.caller, ip, command.nonce)
        lic, product = judged.facts.license, judged.facts.product
        if not judged.ok or lic is None or product is None:
            return None
        offer = releases.offered(product, lic, _channel(command.channel))
        if offer.version_id is None:
            return None
        label = offer.label or ""
        wanted = rt.wants_update(offer.label, command.current)
        instances = b"[]"
        if wanted:
            async with self.storage.unit_of_work() as uow:
                version = await uow.versions.by_id(offer.version_id)
            if version is None or version.withdrawn_at is not None:  # withdrawn meanwhile
                return None
            instances = await self._nodes_json(lic, product, version, command.key,
                                               command.nodes == "compact")
        # The nodes are spliced in as the JSON text they are kept as, never parsed again.
        head = json.dumps({"nonce": command.nonce, "version": label}, separators=(",", ":"),
                          ensure_ascii=False).encode()
        plaintext = b"".join([head[:-1], b',"instances":', instances, b"}"])
        sealed = await self.offload(lambda: seal(command.key, command.nonce, plaintext))
        return Updated(label, wanted, sealed)

    async def _nodes_json(self, lic: License, product: Product, version: Version, key: str,
                          compact: bool) -> bytes:
        """The copy's nodes as JSON text, in the form asked for, made once per copy and
        form and kept (encrypted, like the copy) beside the copy, so a repeat `/update` only
        decrypts and seals."""
        where = nodes_context(version.id, lic.id, lic.key_generation, compact)
        async with self.storage.unit_of_work() as uow:
            kept = await uow.copies.nodes(version.id, lic.id, lic.key_generation, compact)
        if kept is not None:
            return await self.copies.decrypt(kept, where)
        copy, stored = await self.copies.prepared_and_stored(lic, product, version, key)

        def make() -> bytes:
            nodes = to_nodes(self.models.read(copy), compact=compact)
            return json.dumps(nodes, separators=(",", ":"), ensure_ascii=False).encode()

        made = await self.offload(make)
        sealed = await self.copies.encrypt(made, where)
        async with self.storage.unit_of_work() as uow:
            await uow.copies.put_nodes(version.id, lic.id, lic.key_generation, compact, stored,
                                       sealed)
        return made

    async def verify_source(self, command: VerifySource, ip: str) -> bool:
        """POST /verify-source: true only when all five conditions of spec 4.5 hold."""
        caller, name = command.caller, command.script_name
        key_facts = await self._count_and_read(caller, ip)
        async with self.storage.unit_of_work() as uow:
            product = await uow.products.by_id(caller.product_id)
            mine = (await uow.licenses.for_user(caller.product_id, caller.user_id)
                    if product else None)
            blacklisted = bool(product) and await uow.blacklist.contains(
                product.studio_id if product else "", caller.user_id)
            stored: tuple[bytes, ...] = ()
            for version_id in _verified_versions(product, mine):
                scripts = await uow.versions.scripts(version_id, name)
                stored += tuple(sc.source for sc in scripts)
        facts = rt.SourceFacts(product, key_facts.license, mine, blacklisted, stored)
        verdict = rt.verify_source(caller, name,
                                   command.source.encode("utf-8", "surrogatepass"), facts,
                                   self.clock.now())
        if verdict.alerts and product is not None:
            async with self.storage.unit_of_work() as uow:
                await self._store_alerts(uow, Facts(None, product, 0, False), verdict.alerts)
        return verdict.ok
