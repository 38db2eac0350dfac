"""The audit trail (docs/audit.md): every state change told with who made it, when, in which
request, and which fields changed, never a secret.

One mechanism serves every use case, none of which knows of it (as `Joining` serves the
idempotent calls): the storage the use cases are given (`Audited`) hands out units of work
whose repositories tell their writes (`licore.services.audited`). An entry is added in the
unit of work of its change, so a change rolled back (a refused request) leaves no entry, and
an entry never stands without its change. Who acts and the request id come from the call's
context (`licore.audit.acting`, `REQUEST_ID`), set once at each edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs

from licore.actors import ActingStudio
from licore.audit import AuditEntry, AuditFilter
from licore.commands import ListAudit
from licore.model import Page
from licore.services import audited as a
from licore.services.audit_journal import Journal
from licore.services.ids import Ids
from licore.services.overlay import Overlay
from licore.storage_ports import Storage, UnitOfWork

DEFAULT_PAGE = 100  # the trail only grows: a list without `limit` answers this many


class AuditedUnitOfWork:
    """The storage's unit of work, its audited repositories in place of its own."""

    def __init__(self, inner: UnitOfWork, ids: Ids) -> None:
        journal = Journal(inner, ids)
        self._inner = inner
        self.accounts = a.AuditedAccounts(inner.accounts, journal)
        self.studios = a.AuditedStudios(inner.studios, journal)
        self.clients = a.AuditedClients(inner.clients, journal)
        self.api_keys = a.AuditedApiKeys(inner.api_keys, journal)
        self.products = a.AuditedProducts(inner.products, journal)
        self.versions = a.AuditedVersions(inner.versions, journal)
        self.licenses = a.AuditedLicenses(inner.licenses, journal)
        self.blacklist = a.AuditedBlacklist(inner.blacklist, journal)
        self.hooks = a.AuditedHooks(inner.hooks, journal)
        self.outbox = a.AuditedOutbox(inner.outbox, journal)
        self.runtime = a.AuditedRuntime(inner.runtime, journal)
        self.images = a.AuditedImages(inner.images, journal)

    def __getattr__(self, name: str) -> Any:
        # The repositories whose writes are not state changes of the trail (devices, copies,
        # alerts, counters, idempotency keys, the trail itself) are the storage's own.
        return getattr(self._inner, name)


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

    async def everywhere(self, command: ListAudit) -> Page[AuditEntry]:
        """Every studio's entries and the operator's own (people, apps): `licore audit`."""
        async with self.storage.unit_of_work() as uow:
            return await uow.audit.everywhere(_where(command),
                                              command.page.limit or DEFAULT_PAGE,
                                              command.page.cursor)


def _where(command: ListAudit) -> AuditFilter:
    return AuditFilter(command.action, command.actor, command.subject, command.since,
                       command.until)
