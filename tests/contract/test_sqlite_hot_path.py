"""SQLite's runtime hot path on the event loop's thread (adapters_storage.sqlite): it never
makes the loop wait for a lock, falls back to aiosqlite when one is held, leaves the WAL's
checkpoints to aiosqlite, and stays off where it cannot be safe (no WAL)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from adapters_storage.sqlite import CHECKPOINT_AFTER, SqliteStorage


async def test_a_held_write_lock_sends_the_call_through_aiosqlite_and_the_loop_runs_on(
        tmp_path: Path) -> None:
    path = tmp_path / "licore.db"
    store = SqliteStorage(path)
    await store.migrate()
    try:
        assert (await store.runtime_read(["k"], 60, "d", "2", None))[0] == [1]
        assert await store.use_nonce("lic_1", "n1", 2_000, 1_000)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another writer, as another process would be
        read = asyncio.ensure_future(store.runtime_read(["k"], 60, "d", "2", None))
        nonce = asyncio.ensure_future(store.use_nonce("lic_1", "n2", 2_000, 1_000))
        replay = asyncio.ensure_future(store.use_nonce("lic_1", "n1", 2_000, 1_000))
        for _ in range(20):
            # The loop keeps turning while the calls wait for the lock: a statement that
            # waited on the loop's thread would not let this run until it was done, and
            # one that failed on the lock would have ended the calls with an error.
            await asyncio.sleep(0.005)
            assert not (read.done() or nonce.done() or replay.done())
        holder.execute("COMMIT")
        holder.close()
        counts, _ = await read
        assert counts == [2]  # counted once: the statement that met the lock did nothing
        assert await nonce and not await replay
    finally:
        await store.close()


async def test_the_loops_connection_waits_for_no_lock_and_checkpoints_nothing(
        tmp_path: Path) -> None:
    store = SqliteStorage(tmp_path / "licore.db")
    await store.migrate()
    try:
        await store.runtime_read(["k"], 60, "d", "2", None)
        conn = store._direct
        assert conn is not None
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 0
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
    finally:
        await store.close()


async def test_another_thread_checkpoints_the_wal_the_loops_writes_grow(tmp_path: Path) -> None:
    path = tmp_path / "licore.db"
    store = SqliteStorage(path)
    await store.migrate()
    writes = 4 * CHECKPOINT_AFTER
    try:
        for i in range(writes):  # one write each: a counter of its own
            await store.runtime_read([f"k{i}"], 60, "d", "2", None)
            # A lone call never waits, so it never lets the loop turn; a server's loop
            # turns between requests (it waits for the next one), and starts the checkpoint.
            await asyncio.sleep(0)
        if store._checkpoint is not None:
            await store._checkpoint
        # Frames in the WAL since it last started over: without the checkpoints every
        # write's (at least one a write) would still be there.
        probe = sqlite3.connect(path)
        busy, frames, _ = probe.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        probe.close()
        assert busy == 0 and frames < writes, frames
    finally:
        await store.close()


async def test_without_wal_every_statement_goes_through_aiosqlite() -> None:
    store = SqliteStorage(":memory:")  # a second connection would be another database
    await store.migrate()
    try:
        assert (await store.runtime_read(["k"], 60, "d", "2", None))[0] == [1]
        assert (await store.runtime_read(["k"], 60, "d", "2", None))[0] == [2]
        assert await store.use_nonce("lic_1", "n1", 2_000, 1_000)
        assert not await store.use_nonce("lic_1", "n1", 2_000, 1_000)
        assert store._direct is None
    finally:
        await store.close()
