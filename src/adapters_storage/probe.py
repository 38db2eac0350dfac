"""Can this database be reached? Asked once when the operator's command starts, so a wrong
host, a stopped server or a missing database is one clear sentence, not a driver traceback
after a pool has waited thirty seconds."""

from __future__ import annotations

import sqlite3
from urllib.parse import urlsplit

CONNECT_TIMEOUT = 5


def _where(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return f"{host}:{parts.port or 5432}{parts.path or ''}"


async def problem(url: str) -> str | None:
    """None when the database answers; otherwise what is wrong and what to do, without the
    URL's password."""
    if url.startswith("sqlite:"):
        path = url.removeprefix("sqlite:///")
        try:
            sqlite3.connect(path).close()
        except sqlite3.Error as exc:
            return f"cannot open the SQLite file {path!r}: {exc}"
        return None
    import psycopg  # only here: a process on SQLite never loads the driver

    try:
        conn = await psycopg.AsyncConnection.connect(url, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.OperationalError as exc:
        whole = " ".join(str(exc).split())
        text = str(exc).strip().splitlines()[0] if whole else type(exc).__name__
        where = _where(url)
        if "refused" in whole:
            return (f"PostgreSQL at {where} refused the connection: is the server running "
                    f"and listening there?")
        if "does not exist" in whole:
            missing = whole[whole.rfind("FATAL:"):].removeprefix("FATAL:").strip()
            return f"PostgreSQL at {where}: {missing}; create it or fix the URL"
        if "timeout" in whole.lower():
            return (f"PostgreSQL at {where} did not answer within {CONNECT_TIMEOUT} s; "
                    f"check the host and the network")
        return f"PostgreSQL at {where}: {text}"
    await conn.close()
    return None
