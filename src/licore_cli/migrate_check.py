"""`licore migrate --check`: what `licore migrate` (or the first start of this release) would
do to the database, changing nothing (docs/operators.md, "Upgrading and rolling back")."""

from __future__ import annotations

from typing import Any

from adapters_storage import open_storage
from adapters_storage.migration_kinds import applied, contractions
from adapters_storage.schema import MIGRATIONS, statements


async def check(url: str) -> tuple[dict[str, Any], str]:
    """The plan as a value (for --json) and as lines for people."""
    dialect = "postgresql" if url.startswith("postgres") else "sqlite"
    storage = open_storage(url)
    try:
        done = await applied(storage, dialect)
    finally:
        await storage.close()
    known = len(MIGRATIONS)
    pending = [{"migration": n, "kind": "contract" if contractions(m) else "expand",
                "statements": [" ".join(s.split()) for s in statements(dialect, m)]}
               for n, m in enumerate(MIGRATIONS, start=1) if n not in done]
    newer = sorted(n for n in done if n > known)
    value = {"database_at": max(done, default=0), "release_knows": known,
             "pending": pending, "newer": newer}
    return value, _text(value, pending, newer)


def _text(value: dict[str, Any], pending: list[dict[str, Any]], newer: list[int]) -> str:
    lines = [f"the database is at migration {value['database_at']}; this release knows "
             f"{value['release_knows']}"]
    if newer:
        lines.append(f"a newer release applied migration(s) {', '.join(map(str, newer))}; "
                     f"this release serves the database as it is (they expand only), and "
                     f"`licore migrate` changes nothing")
    if not pending:
        lines.append("nothing to apply")
    for step in pending:
        lines.append(f"would apply migration {step['migration']} ({step['kind']}):")
        lines += [f"  {statement[:160]}" for statement in step["statements"]]
    if any(step["kind"] == "contract" for step in pending):
        lines.append("a contraction: every host must run this release (or a later one) "
                     "before it is applied; see docs/operators.md, \"Upgrading and rolling "
                     "back\"")
    elif pending:
        lines.append("expand only: hosts of the release before keep serving the database "
                     "after it, so hosts can be upgraded one at a time")
    return "\n".join(lines)
