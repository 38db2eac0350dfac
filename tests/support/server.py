"""A real `licore serve` process on a free loopback port, for end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from licore_cli.test_clock import ENV as TEST_CLOCK
from tests.support.fakes import TEST_KEK

LICORE = Path(sys.executable).parent / "licore"
# The servers answering now, by origin: whose answers tests/support/answers.py judges.
SERVING: dict[str, Server] = {}


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, database_url: str, data_dir: Path, extra_env: dict[str, str]) -> None:
        self._document: dict[str, Any] | None = None
        self.database_url = database_url
        self.data_dir = data_dir
        self.workers = extra_env.pop("workers", "1")
        self.host = extra_env.pop("host", "127.0.0.1")  # another loopback address: a host
        # A test server meets a handful of small builds: the protection workers it would
        # warm as it starts would cost each start a second of CPU for nothing. The tests of
        # those workers ask for them.
        self.extra_env = {"LICORE_PROTECT_PROCESSES": "0", **extra_env}
        # Several test workers pick free ports at once; a port another process took between
        # the pick and the bind is picked again rather than failing the test.
        for attempt in range(3):
            self._start()
            try:
                self._wait_ready()
                return
            except RuntimeError:
                if attempt == 2 or "address already in use" not in self.log().lower():
                    raise
                self._log.close()

    @property
    def clock_file(self) -> Path:
        """The server's clock shift (licore_cli.test_clock): seconds past the wall clock."""
        return self.data_dir / "clock-shift"

    def clock_shift(self) -> float:
        text = self.clock_file.read_text() if self.clock_file.exists() else ""
        return float(text) if text.strip() else 0.0

    def advance_clock(self, seconds: float) -> None:
        """Move every process of the server `seconds` forward, at once."""
        draft = self.clock_file.with_name(self.clock_file.name + ".draft")
        draft.write_text(repr(self.clock_shift() + seconds))
        draft.replace(self.clock_file)

    def next_window(self, window: int = 60) -> None:
        """Move the server's clock to the start of its next rate window (a minute)."""
        next_window(self, window=window)

    def _start(self) -> None:
        self.port = free_port(self.host)
        self.url = f"http://{self.host}:{self.port}"
        self.log_path = self.data_dir / f"server-{self.port}.log"
        # A setting may name the server's own address (its public URL, say) as "{url}".
        extra_env = {k: v.replace("{url}", self.url) for k, v in self.extra_env.items()}
        env = {**os.environ, "LICORE_DATABASE_URL": self.database_url,
               "LICORE_DATA_DIR": str(self.data_dir), "LICORE_KEK": TEST_KEK.hex(),
               TEST_CLOCK: str(self.clock_file), **extra_env}
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [str(LICORE), "serve", "--host", self.host, "--port", str(self.port),
             "--workers", self.workers],
            env=env, cwd=self.data_dir, stdout=self._log, stderr=subprocess.STDOUT,
            # A group of its own: the master's workers are stopped with it, even when the
            # master is killed before it could stop them (they would outlive the test).
            start_new_session=True)

    def _wait_ready(self) -> None:
        # Generous: four workers importing everything on a machine that runs the rest of the
        # suite beside them have taken over a minute to answer; a hang still ends.
        deadline = time.monotonic() + 180
        # Until something listens a bare connect is refused at next to no cost; an httpx call
        # per try (a client each) cost about 1.5 ms of CPU, 20 times a second for as long as
        # the workers take to start (up to 270 tries for four). One client asks once it does.
        with httpx.Client(timeout=1) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"licore serve exited:\n{self.log()}")
                if self._listening():
                    with contextlib.suppress(httpx.HTTPError):
                        if client.get(f"{self.url}/readyz").status_code == 200:
                            # Code from elsewhere (test_upgrade_e2e's previous release) is
                            # not this checkout's to judge.
                            if "PYTHONPATH" not in self.extra_env:
                                SERVING[self.url] = self
                            return
                time.sleep(0.05)
        self._kill_group()
        raise RuntimeError(f"licore serve did not become ready:\n{self.log()}")

    def _listening(self) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex((self.host, self.port)) == 0

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def log_showing(self, text: str, seconds: float = 10) -> str:
        """The log once it holds `text` (or as it is after `seconds`): a line about a request
        may be written just after its answer has gone, and a loaded machine widens the gap."""
        deadline = time.monotonic() + seconds
        log = self.log()
        while text not in log and time.monotonic() < deadline:
            time.sleep(0.05)
            log = self.log()
        return log

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def document(self) -> dict[str, Any] | None:
        """The server's `/openapi.json`, read once (tests/support/answers.py)."""
        if self._document is None:
            self._document = {}  # meanwhile, and should it not answer: nothing to judge by
            with contextlib.suppress(httpx.HTTPError, ValueError):
                self._document = httpx.get(f"{self.url}/openapi.json", timeout=60).json()
        return self._document

    def stop(self) -> None:
        SERVING.pop(self.url, None)
        self.process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        self._kill_group()  # whatever of the group is left
        self._log.close()


def next_window(*servers: Server, window: int = 60) -> None:
    """Move the servers' clocks (one shift for all: they share a database's counters) to
    the start of their next rate window: every count starts again, and a whole window of
    wall-clock time lies ahead before the counts would start again on their own."""
    shifts = {server.clock_shift() for server in servers}
    assert len(shifts) == 1, f"the servers' clocks differ: {shifts}"
    now = time.time() + shifts.pop()
    for server in servers:
        server.advance_clock(window - now % window + 0.001)


@contextlib.contextmanager
def running_server(database_url: str, **extra_env: str) -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(database_url, Path(tmp), extra_env)
        try:
            yield server
        finally:
            server.stop()
