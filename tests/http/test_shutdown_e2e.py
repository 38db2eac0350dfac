"""Issue 13, case 6: SIGTERM while a request body is still arriving. The server stops
accepting, lets the request finish (200, the whole answer), and exits cleanly: no traceback
in its log. With one process (Hypercorn drains) and with supervised workers."""

from __future__ import annotations

import json
import signal
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.server import running_server

pytestmark = pytest.mark.slow


def _every_worker_serving(port: int, connections: int = 48) -> None:
    """Each worker listens on its own socket from the start (SO_REUSEPORT), and a connection
    the kernel gives a worker still starting waits for it. Answers to 48 connections at once
    mean every one of 3 workers got some (all but surely: 3 x (2/3)^48) and is serving, so
    the SIGTERM below meets no worker that never started, whose waiting connections it
    would end unanswered."""
    def fetch() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: licore\r\nConnection: close\r\n\r\n")
            while conn.recv(65536):
                pass

    with ThreadPoolExecutor(connections) as pool:
        list(pool.map(lambda _: fetch(), range(connections)))


@pytest.mark.parametrize("workers", ["1", "3"])
def test_sigterm_during_a_slow_upload_lets_it_finish(database_url: str, workers: str) -> None:
    with running_server(database_url, workers=workers) as server:
        if workers != "1":
            _every_worker_serving(server.port)
        body = json.dumps({"key": "k" * 40, "user_id": "1", "product_id": "p",
                           "nonce": "n" * 16}).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as conn:
            conn.sendall(b"POST /runtime/check HTTP/1.1\r\nHost: licore\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n" % len(body))
            for i, byte in enumerate(body):  # about three seconds of upload
                conn.sendall(bytes([byte]))
                if i == 4:
                    server.process.send_signal(signal.SIGTERM)
                time.sleep(3 / len(body))
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert answer.endswith(b'{"success":false}')
        assert server.process.wait(60) == 0
        assert "Traceback" not in server.log()
        assert '"status": 500' not in server.log()
