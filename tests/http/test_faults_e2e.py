"""Faults under load (issue 13): a worker killed with SIGKILL is replaced and the others keep
answering; PostgreSQL stopped and started again under load gives 503s with Retry-After (never
a 500, never a hang), `/readyz` tells the truth, and the service recovers by itself. Nothing
is left half-written. The PostgreSQL that is restarted is a private cluster this test starts
(initdb in a temporary folder, its own port), never the shared server."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import httpx
import psycopg
import pytest

from adapters_formats.codec import RobloxModelCodec
from tests.http.e2e import auth, owner_key, setup_people
from tests.support.models import product_model
from tests.support.server import Server, free_port, running_server

pytestmark = pytest.mark.slow
CODEC = RobloxModelCodec()
ALL = "products:read products:write licenses:read licenses:write packages:write"


def workers_of(server: Server) -> set[int]:
    """The pids of the server's worker processes (not multiprocessing's helpers)."""
    pid = server.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = set()
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        # Workers are forked from the supervisor (the same command line); multiprocessing's
        # resource tracker is the one other child.
        if b"resource_tracker" not in cmdline:
            found.add(int(child))
    return found


@attrs.define
class Load:
    """Threads creating products as fast as they are answered, recording every outcome."""

    server: Server
    key: str
    threads: int = 6
    outcomes: list[tuple[str, str]] = attrs.Factory(list)  # (outcome, title)
    retry_after_missing: int = 0
    _stop: threading.Event = attrs.Factory(threading.Event)
    _running: list[threading.Thread] = attrs.Factory(list)

    def _run(self, n: int) -> None:
        with httpx.Client(base_url=self.server.url, timeout=20) as client:
            i = 0
            while not self._stop.is_set():
                i += 1
                title = f"Load {n} {i}"
                try:
                    r = client.post("/v1/products", json={"title": title},
                                    headers=auth(self.key))
                except httpx.TimeoutException:
                    self.outcomes.append(("timeout", title))
                    continue
                except httpx.TransportError as exc:
                    self.outcomes.append((f"lost {type(exc).__name__}", title))
                    continue
                if r.status_code == 503 and "retry-after" not in r.headers:
                    self.retry_after_missing += 1
                self.outcomes.append((str(r.status_code), title))

    def __enter__(self) -> Load:
        for n in range(self.threads):
            t = threading.Thread(target=self._run, args=(n,), daemon=True)
            t.start()
            self._running.append(t)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for t in self._running:
            t.join(30)

    def counts(self) -> Counter[str]:
        return Counter(o for o, _ in self.outcomes)

    def created(self) -> set[str]:
        return {title for o, title in self.outcomes if o == "200"}


def wait_until(predicate: object, seconds: float) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def _query(database_url: str, sql: str) -> list[tuple[object, ...]]:
    if database_url.startswith("sqlite"):
        import sqlite3

        con = sqlite3.connect(database_url.removeprefix("sqlite:///"))
        try:
            return list(con.execute(sql))
        finally:
            con.close()
    with psycopg.connect(database_url) as conn:
        return list(conn.execute(sql))


def stored_titles(database_url: str) -> set[str]:
    return {str(r[0]) for r in _query(database_url, "SELECT title FROM products")}


def orphan_blobs(database_url: str) -> int:
    """Stored build files no version row names. A blob and its version are written in one
    transaction, so a fault must never leave one (docs/operators.md, "No stored build
    without its row")."""
    rows = _query(database_url, "SELECT COUNT(*) FROM blobs b WHERE NOT EXISTS "
                                "(SELECT 1 FROM versions v WHERE v.blob_id = b.id)")
    return int(str(rows[0][0]))


@contextmanager
def uploading(server: Server, key: str) -> Iterator[Counter[str]]:
    """A thread uploading build files (each about 1 MiB) to one product while the block
    runs; the outcomes it saw."""
    product = httpx.post(f"{server.url}/v1/products", json={"title": "Uploads"},
                         headers=auth(key), timeout=20).json()["id"]
    data = CODEC.write(product_model(extra=2000))
    outcomes: Counter[str] = Counter()
    stop = threading.Event()

    def run() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            try:
                r = httpx.post(f"{server.url}/v1/packages/versions", content=data, timeout=60,
                               params={"product_id": product, "version": f"1.0.{i}"},
                               headers=auth(key))
                outcomes[str(r.status_code)] += 1
            except httpx.TransportError as exc:
                outcomes[f"lost {type(exc).__name__}"] += 1

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield outcomes
    finally:
        stop.set()
        thread.join(60)


def test_a_killed_worker_is_replaced_and_the_others_keep_answering(
        module_database_url: str) -> None:
    with running_server(module_database_url, workers="3",
                        LICORE_PARTNER_RATE_LIMIT="100000") as server:
        people = setup_people(server.database_url, "6")
        key = owner_key(server, people, ALL)
        assert wait_until(lambda: len(workers_of(server)) == 3, 30)
        before = workers_of(server)
        with Load(server, key) as load, uploading(server, key) as uploads:
            # Under load: calls answered and an upload stored, the next one on its way.
            assert wait_until(lambda: load.counts()["200"] > 20 and uploads["200"] > 0, 60)
            victim = min(before)
            os.kill(victim, signal.SIGKILL)
            assert wait_until(lambda: len(workers_of(server)) == 3
                              and victim not in workers_of(server), 30), server.log()[-3000:]
            served_before = load.counts()["200"]
            assert wait_until(lambda: load.counts()["200"] > served_before + 50, 60)
        assert server.process.poll() is None  # the server itself never stopped
        counts = load.counts()
        # Only requests the dead worker held are lost (their connection died with it).
        assert set(counts) <= {"200", "lost RemoteProtocolError", "lost ReadError",
                               "lost ConnectError"}, counts
        assert sum(n for o, n in counts.items() if o != "200") <= load.threads, counts
        assert "Traceback" not in server.log()
        # Every answered creation is stored; nothing else beyond what the lost ones may have
        # committed before the kill.
        stored = {t for t in stored_titles(server.database_url) if t.startswith("Load ")}
        assert load.created() <= stored
        assert len(stored - load.created()) <= load.threads
        # Uploads cut by the kill stored nothing half-way: every blob has its version row.
        assert uploads["200"] > 0, uploads
        assert set(uploads) <= {"200", "lost RemoteProtocolError", "lost ReadError",
                                "lost ConnectError", "lost WriteError"}, uploads
        assert orphan_blobs(server.database_url) == 0


@attrs.frozen
class Cluster:
    data: Path
    port: int
    pg_ctl: str
    as_owner: tuple[str, ...]

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str) -> None:
        subprocess.run([*self.as_owner, self.pg_ctl, "-D", str(self.data), *args], check=True,
                       capture_output=True, timeout=120)


@contextmanager
def private_postgres() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this test's own, on a free port, removed afterwards."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.fail("PostgreSQL's server binaries (initdb, pg_ctl) are needed")
    bindir = Path(found[-1]).parent
    root = Path(tempfile.mkdtemp(prefix="licore-pg-"))
    as_owner: tuple[str, ...] = ()
    if os.geteuid() == 0:  # initdb refuses to run as root
        import pwd

        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
        as_owner = ("runuser", "-u", "postgres", "--")
    data, port = root / "data", free_port()
    subprocess.run([*as_owner, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U",
                    "postgres", "--no-sync"], check=True, capture_output=True, timeout=120)
    cluster = Cluster(data, port, str(bindir / "pg_ctl"), as_owner)
    options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
               "-c max_connections=60")
    cluster.ctl("-o", options, "-l", str(root / "log"), "-w", "start")
    try:
        yield cluster
    finally:
        try:
            cluster.ctl("-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(root, ignore_errors=True)


def test_postgres_restarted_under_load_gives_503_then_recovers_by_itself() -> None:
    with private_postgres() as cluster, running_server(
            cluster.url, workers="2", LICORE_PARTNER_RATE_LIMIT="100000") as server:
        people = setup_people(server.database_url, "8")
        key = owner_key(server, people, ALL)
        with Load(server, key) as load, uploading(server, key) as uploads:
            # Under load: calls answered and an upload stored, the next one on its way.
            assert wait_until(lambda: load.counts()["200"] > 20 and uploads["200"] > 0, 60)
            cluster.ctl("-m", "fast", "-w", "stop")
            # While it is away: 503s, and /readyz says so without hanging.
            assert wait_until(lambda: load.counts()["503"] > 0, 30), load.counts()
            ready = httpx.get(f"{server.url}/readyz", timeout=5)
            assert ready.status_code == 503 and "retry-after" in ready.headers
            # Away for a while: more calls refused before it comes back.
            refused = load.counts()["503"]
            assert wait_until(lambda: load.counts()["503"] > refused + 20, 30), load.counts()
            cluster.ctl("-o", f"-p {cluster.port} -k {cluster.data.parent} -c "
                        "listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60",
                        "-l", str(cluster.data.parent / "log"), "-w", "start")
            # Back by itself: no restart of licore, no operator.
            assert wait_until(lambda: httpx.get(f"{server.url}/readyz",
                                                timeout=5).status_code == 200, 60)
            recovered = load.counts()["200"]
            assert wait_until(lambda: load.counts()["200"] > recovered + 50, 60), load.counts()
        counts = load.counts()
        assert set(counts) <= {"200", "503"}, counts  # never a 500, a hang or a lost answer
        assert load.retry_after_missing == 0
        assert "Traceback" not in server.log()
        stored = {t for t in stored_titles(server.database_url) if t.startswith("Load ")}
        assert load.created() <= stored
        # Uploads cut by the outage stored nothing half-way.
        assert set(uploads) <= {"200", "503"} and uploads["200"] > 0, uploads
        assert orphan_blobs(server.database_url) == 0
