"""`licore serve --workers 2` spreads connections over its workers (licore_cli.supervisor):
each worker listens on a socket of its own (one address, SO_REUSEPORT), so the kernel hands
new connections to them by their addresses. On one shared socket a load's 32 keep-alive
connections all landed on one worker in a fifth to three quarters of the rounds; here each
of 32 connections is answered and held open, and both workers hold some of them (all on
one would be a 2 in 2^32 chance)."""

from __future__ import annotations

import http.client
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import Server, running_server


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, workers="2") as s:
        yield s


def _established(port: int) -> set[str]:
    """Inodes of the established TCP connections whose local port is `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                found.add(inode)
    return found


def _held_by(pid: int, inodes: set[str]) -> int:
    held = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            held += 1
    return held


def _workers(server: Server) -> list[int]:
    master = server.process.pid
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(c) for c in children]


def _listening(port: int) -> int:
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


def test_each_worker_listens_on_a_socket_of_its_own(server: Server) -> None:
    assert _listening(server.port) == 2


def test_connections_are_spread_over_the_workers(server: Server) -> None:
    connections = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                   for _ in range(32)]
    try:
        # All connected before any is used, as a load generator opens them: they wait in
        # the kernel's queue together, where one worker's accept loop took them all.
        for c in connections:
            c.connect()
        for c in connections:
            c.request("GET", "/healthz")
            r = c.getresponse()
            assert r.status == 200
            r.read()  # the connection stays open (keep-alive), held by its worker
        inodes = _established(server.port)
        held = {pid: _held_by(pid, inodes) for pid in _workers(server)}
        assert len(held) == 2, held
        assert sum(held.values()) == 32, held
        assert all(n > 0 for n in held.values()), held
    finally:
        for c in connections:
            c.close()
