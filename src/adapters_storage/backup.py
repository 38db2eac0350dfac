"""A consistent copy of the database while the server runs: SQLite's online backup API, or
PostgreSQL's own `pg_dump`. What the copy is worth without the key-encryption key: nothing
of the license keys (docs/operators.md, "Backups")."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit


class BackupFailed(Exception):
    """One line for the operator: what went wrong and what to do."""


def backup(database_url: str, target: Path) -> str:
    """Copy the database to `target` (a new file); what kind of copy it is, in words."""
    if target.exists():
        raise BackupFailed(f"{target} already exists; name a new file")
    if not target.parent.is_dir():
        raise BackupFailed(f"the folder {str(target.parent)!r} does not exist")
    if database_url.startswith("sqlite:"):
        _sqlite(database_url, target)
        return "a SQLite database file"
    _postgres(database_url, target)
    return "a pg_dump SQL script (restore it with psql)"


def _sqlite(url: str, target: Path) -> None:
    path = url.removeprefix("sqlite://")
    path = path[1:] if path.startswith("/") else path
    if not Path(path).is_file():
        raise BackupFailed(f"there is no SQLite database at {path!r}")
    partial = target.with_name(f".{target.name}.partial")
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        copy = sqlite3.connect(partial)
        try:
            # One step: the copy is the database as of one read transaction, which in WAL
            # mode blocks no writer, so the server goes on answering while it is made.
            source.backup(copy, pages=-1)
        finally:
            copy.close()
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise BackupFailed(f"the SQLite backup failed: {exc}") from None
    finally:
        source.close()
    os.chmod(partial, 0o600)  # it holds every account's digest and every sealed key
    partial.rename(target)  # a reader never sees half a backup under the name asked for


def _schema(url: str) -> str | None:
    """The schema a URL's `options=-csearch_path=...` puts the tables in, if any."""
    for option in parse_qs(urlsplit(url).query).get("options", []):
        for part in unquote(option).split():
            if part.startswith("-csearch_path="):
                return part.removeprefix("-csearch_path=").split(",")[0].strip('"') or None
    return None


def _postgres(url: str, target: Path) -> None:
    program = shutil.which("pg_dump")
    if program is None:
        raise BackupFailed("pg_dump is not on PATH: install PostgreSQL's client tools (on "
                           "Debian `apt install postgresql-client`, the server's major "
                           "version or newer) and run `licore backup` again")
    schema = _schema(url)
    partial = target.with_name(f".{target.name}.partial")
    command = [program, "--no-owner", "--no-privileges", "--file", str(partial),
               *(["--schema", schema] if schema else []), "--dbname", url]
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.close(fd)
    # pg_dump's own path and arguments: no shell, nothing a client sent
    done = subprocess.run(command, capture_output=True, text=True,  # noqa: S603
                          check=False, env=_password_in_env(command))
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        said = " ".join(done.stderr.split()) or f"exit code {done.returncode}"
        raise BackupFailed(f"pg_dump failed: {said}")
    partial.rename(target)


def _password_in_env(command: list[str]) -> dict[str, str]:
    """A password in the URL goes to pg_dump in its environment (PGPASSWORD), not on its
    command line, where any user of the host could read it; `command`'s URL loses it."""
    env = dict(os.environ)
    parts = urlsplit(command[-1])
    if parts.password is not None:
        env["PGPASSWORD"] = unquote(parts.password)
        host = parts.netloc.rsplit("@", 1)[1]
        user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
        command[-1] = urlunsplit(parts._replace(netloc=f"{user}@{host}"))
    return env
