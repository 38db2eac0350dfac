"""Sockets are closed within seconds of the client leaving. Hypercorn's connection task
waited out its keep-alive timer (75 s) after the client had closed an idle keep-alive
connection, so a burst of clients left hundreds of server sockets in CLOSE-WAIT for a minute
(issue 30). A burst of keep-alive clients that then close: the server's sockets in CLOSE-WAIT
(read from /proc/net/tcp) fall to none, polled with a deadline well below that timer."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import Server, running_server

CLOSE_WAIT = "08"
CLIENTS = 80


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'licore.db'}"
    with running_server(url, LICORE_OUTBOX_WORKERS="0") as s:
        yield s


def close_waits(port: int) -> int:
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == CLOSE_WAIT:
                count += 1
    return count


def test_sockets_close_soon_after_a_burst_of_clients_leaves(server: Server) -> None:
    clients = []
    for _ in range(CLIENTS):
        c = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
        clients.append(c)
    for c in clients:
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = c.recv(4096)
            assert chunk, "the server closed before answering"
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
    for c in clients:
        c.close()  # idle keep-alive connections, closed by the client
    deadline = time.monotonic() + 10
    left = close_waits(server.port)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = close_waits(server.port)
    assert left == 0, f"{left} server sockets still in CLOSE-WAIT after 10 s"
