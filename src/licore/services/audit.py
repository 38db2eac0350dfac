"""The audit trail (docs/audit.md): every state change told with who made it, when, in which
request, and which fields changed, never a secret.

One mechanism serves every use case, none of which knows of it (as `Joining` serves the
idempotent calls): the storage the use cases are given (`Audited`) hands out units of work
whose repositories tell their writes (`licore.services.audited`). An entry is added in the
unit of work of its change, so a change rolled back (a refused request) leaves no entry, and
an entry never stands without its change. Who acts and the request id come from the call's
context (`licore.audit.acting`, `REQUEST_ID`), set once at each edge."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cached_property
from typing import Any

import attrs

from licore.actors import ActingStudio
from licore.audit import ActorKind, AuditEntry, AuditFilter
from licore.commands import ListAudit
from licore.model import Page
from licore.services import audited as a
from licore.services.audit_journal import Journal
from licore.services.ids import Ids
from licore.services.overlay import Overlay
from licore.storage_ports import (
    Abuse,
    Alerts,
    IdempotencyKeys,
    RateCounters,
    RequestRecords,
    Storage,
    UnitOfWork,
    UsageRecords,
)

DEFAULT_PAGE = 100  # the trail only grows: a list without `limit` answers this many


class AuditedUnitOfWork:
    """The storage's unit of work, its audited repositories in place of its own. Each is
    made when first used: most units of work touch one or two of them (a runtime
    call's place and alerts none), and making them all was most of this layer's cost."""

    def __init__(self, inner: UnitOfWork, ids: Ids) -> None:
        self._inner = inner
        self._ids = ids

    @cached_property
    def _journal(self) -> Journal:  # one per unit of work, shared by its repositories
        return Journal(self._inner, self._ids)

    @cached_property
    def accounts(self) -> a.AuditedAccounts:
        return a.AuditedAccounts(self._inner.accounts, self._journal)

    @cached_property
    def studios(self) -> a.AuditedStudios:
        return a.AuditedStudios(self._inner.studios, self._journal)

    @cached_property
    def clients(self) -> a.AuditedClients:
        return a.AuditedClients(self._inner.clients, self._journal)

    @cached_property
    def api_keys(self) -> a.AuditedApiKeys:
        return a.AuditedApiKeys(self._inner.api_keys, self._journal)

    @cached_property
    def products(self) -> a.AuditedProducts:
        return a.AuditedProducts(self._inner.products, self._journal)

    @cached_property
    def versions(self) -> a.AuditedVersions:
        return a.AuditedVersions(self._inner.versions, self._journal)

    @cached_property
    def licenses(self) -> a.AuditedLicenses:
        return a.AuditedLicenses(self._inner.licenses, self._journal)

    @cached_property
    def abuse(self) -> _AuditedAbuse:
        return _AuditedAbuse(self._inner.abuse, self._journal)

    @cached_property
    def hooks(self) -> a.AuditedHooks:
        return a.AuditedHooks(self._inner.hooks, self._journal)

    @cached_property
    def outbox(self) -> a.AuditedOutbox:
        return a.AuditedOutbox(self._inner.outbox, self._journal)

    @cached_property
    def records(self) -> _AuditedRecords:
        return _AuditedRecords(self._inner.records, self._journal)

    @cached_property
    def images(self) -> a.AuditedImages:
        return a.AuditedImages(self._inner.images, self._journal)

    def __getattr__(self, name: str) -> Any:
        # The repositories whose writes are not state changes of the trail (devices, copies,
        # the trail itself) are the storage's own.
        return getattr(self._inner, name)


class _AuditedAbuse:
    """The blacklist audited; the alerts, which only the runtime raises, as they are."""

    def __init__(self, inner: Abuse, journal: Journal) -> None:
        self._inner = inner
        self._journal = journal

    @property
    def alerts(self) -> Alerts:
        return self._inner.alerts

    @cached_property
    def blacklist(self) -> a.AuditedBlacklist:
        return a.AuditedBlacklist(self._inner.blacklist, self._journal)


class _AuditedRecords:
    """A license's places reset audited; the other records requests leave as they are."""

    def __init__(self, inner: RequestRecords, journal: Journal) -> None:
        self._inner = inner
        self._journal = journal

    @cached_property
    def runtime(self) -> a.AuditedRuntime:
        return a.AuditedRuntime(self._inner.runtime, self._journal)

    @property
    def counters(self) -> RateCounters:
        return self._inner.counters

    @property
    def idempotency(self) -> IdempotencyKeys:
        return self._inner.idempotency

    @property
    def usage(self) -> UsageRecords:
        return self._inner.usage


@attrs.frozen
class Audited(Overlay):
    """The storage the use cases are given: `inner`, whose units of work tell their changes."""

    inner: Storage
    ids: Ids

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[UnitOfWork]:
        async with self.inner.unit_of_work() as uow:
            audited: UnitOfWork = AuditedUnitOfWork(uow, self.ids)
            yield audited


@attrs.frozen
class AuditTrail:
    """Reading the trail: `GET /v1/audit` and the dashboard's audit page. (Entries past the
    operator's `LICORE_AUDIT_RETENTION_DAYS` are swept by `Housekeeping`.)"""

    storage: Storage

    async def list(self, studio: ActingStudio, command: ListAudit) -> Page[AuditEntry]:
        async with self.storage.unit_of_work() as uow:
            return await uow.audit.of_studio(studio.studio_id, _where(command),
                                             command.page.limit or DEFAULT_PAGE,
                                             command.page.cursor)

    async def names(self, entries: Sequence[AuditEntry]) -> dict[str, str]:
        """What a reader calls the people, apps and products the entries name by id: an
        account's username, an app's name, a product's title (ids that are gone are left
        out: the page shows the id alone)."""
        found: dict[str, str] = {}
        async with self.storage.unit_of_work() as uow:
            for ref in sorted(_references(entries)):
                kind, _, ref_id = ref.partition(":")
                name = await _name(uow, kind, ref_id)
                if name is not None:
                    found[ref_id] = name
        return found

    async def everywhere(self, command: ListAudit) -> Page[AuditEntry]:
        """Every studio's entries and the operator's own (people, apps): `licore audit`."""
        async with self.storage.unit_of_work() as uow:
            return await uow.audit.everywhere(_where(command),
                                              command.page.limit or DEFAULT_PAGE,
                                              command.page.cursor)


def _where(command: ListAudit) -> AuditFilter:
    return AuditFilter(command.action, command.actor, command.subject, command.since,
                       command.until)


def _references(entries: Sequence[AuditEntry]) -> set[str]:
    refs: set[str] = set()
    for entry in entries:
        if entry.actor.kind is ActorKind.PERSON:
            refs.add(f"account:{entry.actor.id}")
        elif entry.actor.kind is ActorKind.APP:
            refs.add(f"app:{entry.actor.id}")
        if entry.subject_type in ("account", "app", "product"):
            refs.add(f"{entry.subject_type}:{entry.subject_id}")
    return refs


async def _name(uow: UnitOfWork, kind: str, ref_id: str) -> str | None:
    if kind == "account":
        account = await uow.accounts.by_id(ref_id)
        return None if account is None else account.username
    if kind == "app":
        client = await uow.clients.by_id(ref_id)
        return None if client is None else client.name
    product = await uow.products.by_id(ref_id)
    return None if product is None else product.title
