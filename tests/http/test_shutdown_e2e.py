"""Issue 13, case 6: SIGTERM while a request body is still arriving. The server stops
accepting, lets the request finish (200, the whole answer), and exits cleanly: no traceback
in its log. With one process (Hypercorn drains) and with supervised workers."""

from __future__ import annotations

import json
import signal
import socket
import time

import pytest

from tests.support.server import running_server

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("workers", ["1", "3"])
def test_sigterm_during_a_slow_upload_lets_it_finish(database_url: str, workers: str) -> None:
    with running_server(database_url, workers=workers) as server:
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
