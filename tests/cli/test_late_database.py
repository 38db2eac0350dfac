"""A reboot where PostgreSQL comes up after licore: `licore serve` (two workers) and `licore
worker` started while nothing answers at the database's address keep running: /healthz 200,
/readyz 503, every call 503 with Retry-After, a log line each back-off. Once the database
answers (a loopback forwarder to the test's PostgreSQL, opened by the test), /readyz turns
200 and calls are served by the same processes, without a restart."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from tests.support.fakes import TEST_KEK
from tests.support.server import LICORE, free_port
from tests.support.tcp_gate import TcpGate

pytestmark = pytest.mark.postgres
BACK_OFF = "trying again in"


def through(gate: TcpGate, url: str) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username}@127.0.0.1:{gate.port}" if parts.username else \
        f"127.0.0.1:{gate.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def until(what: Callable[[], bool], seconds: float, failing: Callable[[], str]) -> None:
    """Wait for `what` to hold, polling, or fail with `failing()` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not what():
        if time.monotonic() > deadline:
            pytest.fail(failing())
        time.sleep(0.05)


def answer(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        return None


@pytest.fixture
def gate(pg_schema_url: str) -> Iterator[TcpGate]:
    target = urlsplit(pg_schema_url)
    opened = TcpGate((target.hostname or "127.0.0.1", target.port or 5432))
    try:
        yield opened
    finally:
        opened.close()


def test_started_before_the_database_they_wait_and_then_serve(
        tmp_path: Path, pg_schema_url: str, gate: TcpGate) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env.update(LICORE_DATABASE_URL=through(gate, pg_schema_url), LICORE_KEK=TEST_KEK.hex(),
               LICORE_DATA_DIR=str(tmp_path), LICORE_DATABASE_RETRY="1")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    logs = {name: tmp_path / f"{name}.log" for name in ("serve", "worker")}
    commands = {"serve": ["serve", "--port", str(port), "--workers", "2"], "worker": ["worker"]}
    processes = {}
    for name, args in commands.items():
        with open(logs[name], "wb") as log:
            processes[name] = subprocess.Popen([str(LICORE), *args], env=env, cwd=tmp_path,
                                               stdout=log, stderr=subprocess.STDOUT,
                                               start_new_session=True)

    def shown(name: str) -> str:
        return logs[name].read_text(errors="replace")

    def backed_off_twice(name: str) -> bool:
        return shown(name).count(BACK_OFF) >= 2

    def running() -> None:
        for name, process in processes.items():
            assert process.poll() is None, f"{name} exited:\n{shown(name)}"

    try:
        until(lambda: answer(f"{base}/healthz") == 200, 120, lambda: shown("serve"))
        # several back-offs, each said: the processes are still waiting, not gone
        for name in processes:
            until(partial(backed_off_twice, name), 60, partial(shown, name))
        running()
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 503 and ready.headers["retry-after"], ready.text
        for call in (httpx.get(f"{base}/v1/products"),
                     httpx.post(f"{base}/runtime/check", json={"key": "LK-x", "user_id": 1}),
                     httpx.get(f"{base}/signin")):
            assert call.status_code == 503, call.text
            assert int(call.headers["retry-after"]) >= 1
            assert call.json()["error"] == "temporarily_unavailable"
        line = next(x for x in shown("serve").splitlines() if BACK_OFF in x)
        assert "refused" in line and TEST_KEK.hex() not in line, line

        gate.open()
        # hang guards, not timing claims (the back-off is 1 s here): each of the two workers
        # says it serves, and /readyz agrees
        until(lambda: shown("serve").count("the database answers: serving") == 2, 90,
              lambda: shown("serve"))
        until(lambda: answer(f"{base}/readyz") == 200, 30, lambda: shown("serve"))
        # served now by the same processes: the app's own answers, not the waiting 503
        assert httpx.get(f"{base}/v1/products").status_code == 401
        assert httpx.get(f"{base}/signin").status_code == 200
        until(lambda: "delivering the outbox" in shown("worker"), 30, lambda: shown("worker"))
        running()
        listed = subprocess.run([str(LICORE), "account", "list"], env=env, cwd=tmp_path,
                                capture_output=True, text=True, timeout=60, check=False)
        assert listed.returncode == 0, listed.stderr  # migrated by the waiting server
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    # SIGTERM is said, and the end of the drain (the journal's record of the stop)
    assert "licore stopping on SIGTERM" in shown("serve") and "licore stopped" in shown("serve")
