"""The Runtime API use cases (spec 4.5, contract 5). The hot path is one trip (count the
request, load the facts); the effects (nonce, place, alerts) commit together, in one unit of
work, only when there are any.

A denial is a value (False, or None for the sealed calls), never an exception: the HTTP
adapter answers every denial with the same failure body, so a game cannot learn which check
failed."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from licore import releases
from licore import runtime as rt
from licore.builds.nodes import nodes_json
from licore.builds.template import NodesTemplate, TemplateUnusable, make_template
from licore.commands import AskVersion, Check, Unlock, Update, VerifySource
from licore.errors import RateLimited
from licore.events import Topic
from licore.model import Alert, License, Product, UnlockData, Version
from licore.ports import (
    Clock,
    Compressor,
    KeyVault,
    ModelCodec,
    Offload,
    SingleFlight,
    UpdateFileStore,
    run_alone,
)
from licore.releases import Channel
from licore.runtime import AlertDraft, Caller, Facts
from licore.sealing import Sealed, seal, sealed_code_key, sealing_generation
from licore.services.announce import Announcer, alert_data
from licore.services.builds import Copies, Prepared, nodes_context
from licore.services.ids import Ids
from licore.services.limits import WINDOW
from licore.sources import DEFAULT_IPV6_PREFIX, source_of
from licore.storage_ports import Storage, UnitOfWork
from licore.update_files import NAME, FileForm, UpdateFile, file_key, make_file
from licore.usage import Call, Endpoint, Outcome, hour_of

SEALED_KEYS_KEPT = 20_000  # licenses whose sealed-code key a process keeps (~5 MB at most)


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
    ipv6_prefix: int = DEFAULT_IPV6_PREFIX  # an IPv6 client's network counts as one


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
class FileOffer:
    """Where the update's file is, and until when it is certainly kept there."""

    name: str
    sha256: str
    size: int
    exp: int
    compression: str | None = None  # "zstd": compressed before it was encrypted


@attrs.frozen
class Updated:
    version: str
    update: bool
    sealed: Sealed
    file: FileOffer | None = None  # an update as a file: `sealed` holds only its key


@attrs.frozen
class _Judged:
    ok: bool
    facts: Facts


def _unlock_plaintext(nonce: str, unlock_data: UnlockData, exp: int, sealed_key: str) -> bytes:
    """`{"nonce":..,"data":..,"exp":..,"sealed":..}` with the seller's data spliced in as the
    compact JSON text it is kept as (never parsed and written again on every call).
    `sealed` is licore's extension (docs/api.md): the key the license's sealed functions
    open with, so only a live license's game can run them."""
    try:
        data = unlock_data.text.encode()
    except UnicodeEncodeError:  # text JSON cannot carry as UTF-8: let json escape it
        data = json.dumps(unlock_data.value()).encode()
    return b'{"nonce":%s,"data":%s,"exp":%d,"sealed":"%s"}' % (
        json.dumps(nonce).encode(), data, exp, sealed_key.encode())


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
    once: SingleFlight = run_alone
    files: UpdateFileStore | None = None  # None: updates are never offered as files
    compressor: Compressor | None = None  # None: files are never compressed
    # license id -> its sealed-code key: two HMACs an /unlock, the same answer every time
    # for a license (made from its id under the server's key), so made once a process.
    _sealed_keys: dict[tuple[str, str], str] = attrs.field(factory=dict, init=False, repr=False,
                                               eq=False)

    async def _store_alerts(self, uow: UnitOfWork, facts: Facts,
                            drafts: Sequence[AlertDraft]) -> None:
        if not drafts or facts.product is None:
            return
        now = self.clock.now()
        for d in drafts:
            fresh = self.ids.new("alr")
            stored = await uow.abuse.alerts.record(Alert(
                id=fresh, studio_id=facts.product.studio_id, kind=d.kind,
                product_id=facts.product.id, license_id=d.license_id,
                platform_id=d.platform_id, key_owner_platform_id=d.key_owner_platform_id,
                game_id=d.game_id, script_name=d.script_name, count=1, first_seen_at=now,
                last_seen_at=now), self.limits.alert_window)
            if stored.id == fresh:  # a new alert; a repeat only bumps the count
                await self.announce.event(uow, stored.studio_id, Topic.ALERT_RAISED,
                                          alert_data(stored))

    def _note(self, caller: Caller, endpoint: Endpoint, outcome: Outcome) -> None:
        """Keep the call for the usage rollup (`licore.usage`); it costs no trip of its own."""
        self.storage.note_call(Call(caller.product_id, hour_of(self.clock.now()), endpoint,
                                    outcome, caller.user_id, caller.game_id))

    async def _count_and_read(self, caller: Caller, ip: str, endpoint: Endpoint) -> Facts:
        """Count the request against the per-key and per-IP limits and load the key's
        facts."""
        digest = self.vault.lookup_digest(caller.key)
        now = self.clock.now()
        start = now - now % WINDOW
        (per_key, per_ip), facts = await self.storage.runtime_read(
            [f"rk:{digest}", f"rip:{source_of(ip, self.limits.ipv6_prefix)}"], start, digest,
            caller.user_id, caller.game_id)
        if per_key > self.limits.key_rate_limit or per_ip > self.limits.ip_rate_limit:
            self._note(caller, endpoint, Outcome.RATE_LIMITED)
            raise RateLimited(max(1, start + WINDOW - now))
        return facts

    async def _judge(self, caller: Caller, ip: str, endpoint: Endpoint,
                     nonce: str | None = None) -> _Judged:
        """The license check every call carrying a key shares: count and load, decide
        (pure, `licore.runtime.effects`), store what the decision leaves behind."""
        facts = await self._count_and_read(caller, ip, endpoint)
        decided = rt.effects(caller, facts, nonce, self.clock.now())
        fresh = await self._store(decided, facts)  # a denial's alerts are stored too
        ok = decided.ok and fresh
        self._note(caller, endpoint, Outcome.OK if ok else Outcome.DENIED)
        return _Judged(ok, facts)

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
                await uow.records.runtime.record_place(lic, decided.place, now)
            if nonce is not None and lic is not None:
                fresh = await uow.records.runtime.use_nonce(lic, nonce, now + rt.NONCE_MEMORY, now)
            await self._store_alerts(uow, facts, decided.alerts)
        return fresh

    async def check(self, command: Check, ip: str) -> bool:
        """POST /check: whether the license passes (forgeable; non-critical checks only)."""
        return (await self._judge(command.caller, ip, Endpoint.CHECK)).ok

    async def unlock(self, command: Unlock, ip: str) -> Unlocked | None:
        """POST /unlock: the seller's unlock payload sealed under the buyer's key."""
        judged = await self._judge(command.caller, ip, Endpoint.UNLOCK, command.nonce)
        lic, product = judged.facts.license, judged.facts.product
        if not judged.ok or lic is None or product is None or lic.key_ciphertext is None:
            return None
        exp = self.clock.now() + rt.UNLOCK_VALIDITY
        sealed_for = command.sealed_for or ""
        if sealed_for and sealing_generation(sealed_for) != lic.key_generation:
            # Programs of a copy made for an earlier key: their key moved with the re-key.
            return None
        # `exp` rides inside the sealed payload too, so a tampered outer `exp` is detectable.
        cached = (lic.id, sealed_for)
        sealed_key = self._sealed_keys.get(cached)
        if sealed_key is None:
            if len(self._sealed_keys) >= SEALED_KEYS_KEPT:
                self._sealed_keys.clear()
            sealed_key = sealed_code_key(self.copies.license_secret(lic), sealed_for)
            self._sealed_keys[cached] = sealed_key
        return Unlocked(exp, seal(command.key, command.nonce,
                                  _unlock_plaintext(command.nonce, rt.unlock_data(judged.facts),
                                                    exp, sealed_key)))

    async def version(self, command: AskVersion, ip: str) -> LatestVersion | None:
        """POST /version: the newest published label, and whether the caller should update."""
        judged = await self._judge(command.caller, ip, Endpoint.VERSION)
        product = judged.facts.product
        if not judged.ok or product is None:
            return None
        offer = releases.offered(product, judged.facts.license, _channel(command.channel))
        return LatestVersion(offer.label or "", rt.wants_update(offer.label, command.current),
                             offer.version_id or "")

    async def update(self, command: Update, ip: str) -> Updated | None:
        """POST /update: the buyer's protected copy of the live build as Instance nodes,
        sealed; `update` false (and no instances) when the caller holds the live version."""
        judged = await self._judge(command.caller, ip, Endpoint.UPDATE, command.nonce)
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
            if command.delivery == "file" and self.files is not None:
                return await self._as_file(lic, product, version, command, label)
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
        decrypts and seals. Made from the version's node template and the copy's sources,
        so a buyer's first call costs the copy and the splice, not the whole tree."""
        return (await self._kept_nodes(lic, product, version, key, compact))[0]

    async def _kept_nodes(self, lic: License, product: Product, version: Version, key: str,
                          compact: bool) -> tuple[bytes, bytes]:
        """The nodes' JSON text, and the encrypted bytes they are kept as."""
        where = nodes_context(version.id, lic.id, lic.key_generation, compact)
        async with self.storage.unit_of_work() as uow:
            kept = await uow.copies.nodes(version.id, lic.id, lic.key_generation, compact)
        if kept is not None:
            return await self.copies.decrypt(kept, where), kept
        prepared = await self.copies.prepared_and_stored(lic, product, version, key)
        template = await self._template(version, compact)
        made = await self.offload(lambda: self._spliced(template, prepared, compact))
        sealed = await self.copies.encrypt(made, where)
        async with self.storage.unit_of_work() as uow:
            await uow.copies.put_nodes(version.id, lic.id, lic.key_generation, compact,
                                       prepared.stored, sealed)
        return made, sealed

    async def _as_file(self, lic: License, product: Product, version: Version,
                       command: Update, label: str) -> Updated:
        """The update as a file (docs/runtime.md, "Updates as files"): the copy's nodes
        encrypted once under a key of their own and kept; the answer seals only that key
        and the file's digest, so a repeat call costs a look-up and a small seal."""
        form = FileForm(command.nodes == "compact",
                        command.compression == "zstd" and self.compressor is not None)
        secret = self.copies.license_secret(lic)
        async with self.storage.unit_of_work() as uow:
            file = await uow.copies.file(version.id, lic.id, lic.key_generation, form)
        if file is None:
            file = await self.once(
                f"update-file|{version.id}|{lic.id}|{lic.key_generation}|{form.name}",
                lambda: self._made_file(lic, product, version, command.key, form))
        key = file_key(secret, version.id, lic.key_generation, form, file.text_sha256)
        exp = self.clock.now() + rt.UNLOCK_VALIDITY
        described: dict[str, Any] = {"key": key.hex(), "sha256": file.sha256,
                                     "size": file.size}
        if form.zstd:
            described["compression"] = "zstd"
        plaintext = json.dumps({"nonce": command.nonce, "version": label, "exp": exp,
                                "file": described},
                               separators=(",", ":"), ensure_ascii=False).encode()
        return Updated(label, True, seal(command.key, command.nonce, plaintext),
                       FileOffer(file.name, file.sha256, file.size, exp,
                                 "zstd" if form.zstd else None))

    def _compress(self) -> Callable[[bytes], bytes] | None:
        return None if self.compressor is None else self.compressor.compress

    async def _made_file(self, lic: License, product: Product, version: Version, key: str,
                         form: FileForm) -> UpdateFile:
        files = self.files
        assert files is not None
        text, kept = await self._kept_nodes(lic, product, version, key, form.compact)
        secret = self.copies.license_secret(lic)
        made = await self.offload(lambda: make_file(
            secret, version.id, lic.key_generation, form, text, self._compress()))
        await self.offload(lambda: files.write(made.file.name, made.data))
        async with self.storage.unit_of_work() as uow:
            await uow.copies.put_file(version.id, lic.id, lic.key_generation, form, kept,
                                      made.file)
        return made.file

    async def update_file(self, name: str) -> str | None:
        """Where this host keeps the update file named `name`, remade from the kept nodes
        when another host made it (or it was lost); None when no kept copy has that file."""
        files = self.files
        if files is None or NAME.fullmatch(name) is None:
            return None
        # A stat: cheaper here than the hop to a thread.
        if files.has(name) or await self.once(f"update-file|{name}",
                                              lambda: self._remade(name)):
            return files.path(name)
        return None

    async def _remade(self, name: str) -> bool:
        files = self.files
        assert files is not None
        async with self.storage.unit_of_work() as uow:
            owner = await uow.copies.file_named(name)
            lic = None if owner is None else await uow.licenses.by_id(owner.license_id)
            kept = None if owner is None else await uow.copies.nodes(
                owner.version_id, owner.license_id, owner.key_generation, owner.form.compact)
        if owner is None or lic is None or kept is None or (
                owner.form.zstd and self.compressor is None):
            return False
        text = await self.copies.decrypt(kept, nodes_context(
            owner.version_id, owner.license_id, owner.key_generation, owner.form.compact))
        secret = self.copies.license_secret(lic)
        made = await self.offload(lambda: make_file(
            secret, owner.version_id, owner.key_generation, owner.form, text,
            self._compress()))
        if made.file.name != name:  # the kept nodes changed meanwhile: not that file
            return False
        await self.offload(lambda: files.write(name, made.data))
        return True

    def _spliced(self, template: NodesTemplate | None, prepared: Prepared,
                 compact: bool) -> bytes:
        """The copy's sources spliced into the template; the whole copy read into nodes
        when there is no template or its scripts do not line up with it."""
        if template is not None:
            spliced = (
                template.splice(prepared.sources, from_build=True)
                if prepared.sources is not None else
                template.splice(self.models.read_sources(prepared.copy).scripts,
                                from_build=False))
            if spliced is not None:
                return spliced
        return nodes_json(self.models.read(prepared.copy), compact)

    async def _template(self, version: Version, compact: bool) -> NodesTemplate | None:
        """The version's node template in one form: read from storage, or made once and
        stored. Concurrent first calls in this process share one making (`once`); another
        process may make its own at the same time, and the last one stored stays (they are
        the same)."""
        form = "compact" if compact else "tagged"
        return await self.once(f"nodes-template|{version.id}|{form}",
                               lambda: self._stored_or_made_template(version, compact))

    async def _stored_or_made_template(self, version: Version,
                                       compact: bool) -> NodesTemplate | None:
        async with self.storage.unit_of_work() as uow:
            stored = await uow.copies.template(version.id, compact)
            data = None if stored is not None else await uow.versions.data(version)
        found = NodesTemplate.from_bytes(stored) if stored is not None else None
        if found is not None:
            return found
        if data is None:  # stored by an older revision of the node code
            async with self.storage.unit_of_work() as uow:
                data = await uow.versions.data(version)
        build = data

        def make() -> bytes | None:
            try:
                return make_template(self.models, build, compact, version.sha256).to_bytes()
            except TemplateUnusable:
                return None

        made = await self.offload(make)
        if made is None:
            return None
        async with self.storage.unit_of_work() as uow:
            await uow.copies.put_template(version.id, compact, made)
        return NodesTemplate.from_bytes(made)

    async def verify_source(self, command: VerifySource, ip: str) -> bool:
        """POST /verify-source: true only when all five conditions of spec 4.5 hold."""
        caller, name = command.caller, command.script_name
        key_facts = await self._count_and_read(caller, ip, Endpoint.VERIFY_SOURCE)
        async with self.storage.unit_of_work() as uow:
            product = await uow.products.by_id(caller.product_id)
            mine = (await uow.licenses.for_user(caller.product_id, caller.user_id)
                    if product else None)
            blacklisted = bool(product) and await uow.abuse.blacklist.contains(
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
        self._note(caller, Endpoint.VERIFY_SOURCE, Outcome.OK if verdict.ok else Outcome.DENIED)
        return verdict.ok
