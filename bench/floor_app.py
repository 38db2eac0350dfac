"""The floor: the cheapest honest way to do a runtime call's work on the same server, for
`bench/runtime.py` to measure licore against beside the bare app (issue 34).

A raw ASGI application under the same Hypercorn settings as `licore serve`, on licore's own
database and crypto: for `/runtime/check`, `/runtime/unlock` and `/runtime/version` it parses
the JSON body, computes the key's look-up digest (licore's `AesGcmKeyVault.lookup_digest`
under the server's key), reads the license and its product in one indexed SELECT by that
digest, and answers as licore does when the license passes (`{"ok": false}` when it does
not). `/unlock` also records the nonce (one INSERT, refused when already used) and seals
`{"nonce", "data", "exp"}` under the key with licore's `seal`. What it leaves out is what
licore adds on top: rate counting, places, alerts, access lines, metrics, batching.

SQLite is called directly (`sqlite3`, no thread hop: each statement is an index probe that
returns in microseconds, safe to run on the event loop here); PostgreSQL through psycopg's
own async connection. Configured as licore is: `LICORE_DATABASE_URL` and `LICORE_KEK`.

    hypercorn --bind 127.0.0.1:PORT floor_app:app      (with PYTHONPATH=bench)
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg

from adapters_crypto import AesGcmKeyVault
from licore.sealing import seal

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

NONCE_MEMORY, UNLOCK_VALIDITY = 600, 300  # licore.runtime's
LOOK_UP = ("SELECT l.id, l.platform_id, l.product_id, l.state, p.unlock_data, "
           "p.current_version, p.current_version_id FROM licenses l "
           "JOIN products p ON p.id = l.product_id WHERE l.key_digest = {0}")
NONCE = ("INSERT INTO nonces (license_id, nonce, expires_at) VALUES ({0}, {0}, {0}) "
         "ON CONFLICT DO NOTHING")
FAILED = b'{"ok":false}'
CHECK_FAILED = b'{"success":false}'


class Database:
    """One connection, as licore's hot path keeps one per process."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite: sqlite3.Connection | None = None
        self.pg: psycopg.AsyncConnection[Any] | None = None

    async def open(self) -> None:
        if self.url.startswith("sqlite:///"):
            self.sqlite = sqlite3.connect(self.url.removeprefix("sqlite:///"),
                                          isolation_level=None, check_same_thread=False)
            self.sqlite.execute("PRAGMA busy_timeout = 5000")
            self.sqlite.execute("PRAGMA synchronous = NORMAL")
            self.sqlite.execute("PRAGMA journal_mode = WAL")
        else:
            self.pg = await psycopg.AsyncConnection.connect(self.url, autocommit=True)

    async def license(self, digest: str) -> tuple[Any, ...] | None:
        if self.sqlite is not None:
            row: tuple[Any, ...] | None = self.sqlite.execute(
                LOOK_UP.format("?"), (digest,)).fetchone()
            return row
        assert self.pg is not None
        cur = await self.pg.execute(LOOK_UP.format("%s"), (digest,), prepare=True)
        return await cur.fetchone()

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int) -> bool:
        if self.sqlite is not None:
            return self.sqlite.execute(NONCE.format("?"),
                                       (license_id, nonce, expires_at)).rowcount == 1
        assert self.pg is not None
        cur = await self.pg.execute(NONCE.format("%s"), (license_id, nonce, expires_at),
                                    prepare=True)
        return cur.rowcount == 1


DB = Database(os.environ.get("LICORE_DATABASE_URL", ""))
VAULT = AesGcmKeyVault(bytes.fromhex(os.environ.get("LICORE_KEK", "00" * 32)))


async def answer(path: str, body: dict[str, Any]) -> bytes:
    failed = CHECK_FAILED if path == "/runtime/check" else FAILED
    key, user, product = body.get("key"), body.get("user_id"), body.get("product_id")
    if not isinstance(key, str) or not key:
        return failed
    row = await DB.license(VAULT.lookup_digest(key))
    if row is None or row[1] != str(user) or row[2] != product or row[3] != "active":
        return failed
    if path == "/runtime/check":
        return b'{"success":true}'
    if path == "/runtime/version":
        return json.dumps({"ok": True, "latest": row[5] or "",
                           "update": body.get("current") != row[5],
                           "fileId": row[6] or ""}).encode()
    nonce = body.get("nonce")
    now = int(time.time())
    if not isinstance(nonce, str) or not await DB.use_nonce(row[0], nonce,
                                                            now + NONCE_MEMORY):
        return FAILED
    exp = now + UNLOCK_VALIDITY
    sealed = seal(key, nonce, b'{"nonce":%s,"data":%s,"exp":%d}' % (
        json.dumps(nonce).encode(), row[4].encode(), exp))
    return b'{"ok":true,"exp":%d,"cipher":"%s","tag":"%s"}' % (
        exp, sealed.cipher.encode(), sealed.tag.encode())


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await DB.open()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    try:
        body = json.loads(b"".join(chunks))
        out = await answer(scope["path"], body) if isinstance(body, dict) else FAILED
    except ValueError:
        out = FAILED
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(out)).encode())]})
    await send({"type": "http.response.body", "body": out})
