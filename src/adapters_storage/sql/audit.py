"""The audit trail's rows (docs/audit.md). An entry's changes are one JSON text column, made
and read here: `[{"field", "old", "new"}]`, a field told by name only as `{"field", "shown":
false}`."""

from __future__ import annotations

import json
from typing import Any

from adapters_storage.sql.common import Repository
from licore.audit import Actor, ActorKind, AuditEntry, AuditFilter, Change
from licore.model import Page

_COLUMNS = ("id, studio_id, at, actor_kind, actor_id, key_id, request_id, action, "
            "subject_type, subject_id, changes")


def _change_json(change: Change) -> dict[str, Any]:
    if not change.shown:
        return {"field": change.field, "shown": False}
    return {"field": change.field, "old": change.old, "new": change.new}


def _told(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _change(item: dict[str, Any]) -> Change:
    if item.get("shown") is False:
        return Change(item["field"], shown=False)
    return Change(item["field"], _told(item.get("old")), _told(item.get("new")))


def changes_text(changes: tuple[Change, ...]) -> str:
    return json.dumps([_change_json(c) for c in changes], separators=(",", ":"))


def entry_of(row: tuple[Any, ...]) -> AuditEntry:
    (id_, studio_id, at, kind, actor_id, key_id, request_id, action, subject_type,
     subject_id, changes) = row
    return AuditEntry(id_, studio_id, int(at), Actor(ActorKind(kind), actor_id, key_id),
                      request_id, action, subject_type, subject_id,
                      tuple(_change(c) for c in json.loads(changes)))


def where_sql(where: AuditFilter) -> tuple[str, list[Any]]:
    """The filter's conditions (after `studio_id = ?`) and their parameters."""
    sql, params = "", []
    if where.action is not None:
        family = where.action + "."
        sql += " AND (action = ? OR substr(action, 1, ?) = ?)"
        params += [where.action, len(family), family]
    if where.actor is not None:
        sql += " AND (actor_kind = ? OR actor_id = ? OR key_id = ?)"
        params += [where.actor] * 3
    if where.subject is not None:
        sql += " AND (subject_type = ? OR subject_id = ?)"
        params += [where.subject] * 2
    if where.since is not None:
        sql += " AND at >= ?"
        params.append(where.since)
    if where.until is not None:
        sql += " AND at <= ?"
        params.append(where.until)
    return sql, params


class SqlAuditLog(Repository):
    async def add(self, entry: AuditEntry) -> None:
        await self.db.run(
            f"INSERT INTO audit_entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [entry.id, entry.studio_id, entry.at, entry.actor.kind.value, entry.actor.id,
             entry.actor.key_id, entry.request_id, entry.action, entry.subject_type,
             entry.subject_id, changes_text(entry.changes)])

    async def of_studio(self, studio_id: str, where: AuditFilter, limit: int,
                        cursor: str | None) -> Page[AuditEntry]:
        return await self._newest("studio_id = ?", [studio_id], where, limit, cursor)

    async def everywhere(self, where: AuditFilter, limit: int,
                         cursor: str | None) -> Page[AuditEntry]:
        return await self._newest("1 = 1", [], where, limit, cursor)

    async def _newest(self, scope: str, scoped: list[Any], where: AuditFilter, limit: int,
                      cursor: str | None) -> Page[AuditEntry]:
        conditions, params = where_sql(where)
        sql = f"SELECT {_COLUMNS} FROM audit_entries WHERE {scope}{conditions}"
        params = [*scoped, *params]
        if cursor is not None:
            sql += " AND id < ?"
            params.append(cursor)
        rows = await self.db.rows(sql + " ORDER BY id DESC LIMIT ?", [*params, limit + 1])
        found = [entry_of(r) for r in rows[:limit]]
        return Page(tuple(found), found[-1].id if len(rows) > limit else None)

    async def sweep(self, before: int) -> int:
        return await self.db.run("DELETE FROM audit_entries WHERE at < ?", [before])
