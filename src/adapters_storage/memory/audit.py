"""The audit trail in memory, cut and ordered as the SQL adapters do (newest first)."""

from __future__ import annotations

from collections.abc import Callable

from adapters_storage.memory.tables import Repository
from licore.audit import AuditEntry, AuditFilter
from licore.model import Page


def _passes(entry: AuditEntry, where: AuditFilter) -> bool:
    checks = (
        where.action is None or entry.action == where.action
        or entry.action.startswith(where.action + "."),
        where.actor is None or where.actor in (entry.actor.kind.value, entry.actor.id,
                                               entry.actor.key_id),
        where.subject is None or where.subject in (entry.subject_type, entry.subject_id),
        where.since is None or entry.at >= where.since,
        where.until is None or entry.at <= where.until,
    )
    return all(checks)


class MemoryAuditLog(Repository):
    async def add(self, entry: AuditEntry) -> None:
        self.t.audit[entry.id] = entry

    async def of_studio(self, studio_id: str, where: AuditFilter, limit: int,
                        cursor: str | None) -> Page[AuditEntry]:
        return self._newest(lambda e: e.studio_id == studio_id, where, limit, cursor)

    async def everywhere(self, where: AuditFilter, limit: int,
                         cursor: str | None) -> Page[AuditEntry]:
        return self._newest(lambda e: True, where, limit, cursor)

    def _newest(self, scope: Callable[[AuditEntry], bool], where: AuditFilter, limit: int,
                cursor: str | None) -> Page[AuditEntry]:
        found = sorted((e for e in self.t.audit.values()
                        if scope(e) and (cursor is None or e.id < cursor)
                        and _passes(e, where)), key=lambda e: e.id, reverse=True)
        shown = found[:limit]
        return Page(tuple(shown), shown[-1].id if len(found) > limit else None)

    async def sweep(self, before: int) -> int:
        gone = [k for k, e in self.t.audit.items() if e.at < before]
        for k in gone:
            del self.t.audit[k]
        return len(gone)
