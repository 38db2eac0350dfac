"""Oversized bodies, on SQLite and PostgreSQL: refused by `Content-Length` before a byte of
the body is read (`413 payload_too_large`, `Connection: close`), cut at the limit when sent
chunked, seen by Python's `requests` and `httpx` (not a write timeout), and 300 of them
leave the server's file descriptors and memory where they were.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest
import requests

from tests.http.e2e import People, auth, obtain_key, setup_people
from tests.support.server import Server, running_server

DECLARED = 20 * 1024 * 1024
LIMIT = 1024 * 1024  # the upload limit of this server; JSON bodies have the same


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_PARTNER_RATE_LIMIT="100000",
                        LICORE_MAX_UPLOAD_BYTES=str(LIMIT)) as s:
        yield s


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    people: People = setup_people(server.database_url, "8")
    return obtain_key(server, people, "products:write packages:write", people.owner_id,
                      people.studio_id)


def serving_pid(server: Server) -> int:
    """The process that holds the connections: the one worker, or `licore serve` itself."""
    children = subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True,
                              text=True, check=False).stdout.split()
    return int(children[0]) if children else server.process.pid


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def declare_and_read(server: Server, head: bytes) -> bytes:
    """Headers declaring a 20 MiB body, the first 64 KiB of it, then the answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(head + b"Content-Length: %d\r\n\r\n" % DECLARED)
        with contextlib.suppress(OSError):  # the server may have answered and closed
            s.sendall(b"x" * 65536)
        answer = b""
        while b"\r\n\r\n" not in answer:
            piece = s.recv(65536)
            if not piece:
                break
            answer += piece
        return answer


def settled(measure: Iterator[int], ceiling: int) -> int:
    """The first reading at or below `ceiling`, or the last of 100 (closing sockets is
    asynchronous: a connection just answered may take a moment to be let go)."""
    value = ceiling + 1
    for value in measure:
        if value <= ceiling:
            break
    return value


def test_300_oversized_requests_leave_fds_and_memory_where_they_were(
        server: Server, key: str) -> None:
    pid = serving_pid(server)
    heads = [
        f"POST /v1/products HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
        "Content-Type: application/json\r\n".encode(),
        f"POST /v1/packages/versions?product_id=p&version=1 HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {key}\r\n".encode(),
        b"POST /runtime/unlock HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
    ]
    for head in heads:  # warm up: every code path has run once before the baseline
        declare_and_read(server, head)
    fds_before, rss_before = open_fds(pid), rss_mib(pid)
    statuses: dict[bytes, int] = {}
    for i in range(300):
        answer = declare_and_read(server, heads[i % len(heads)])
        status = answer.split(b" ", 2)[1] if answer.startswith(b"HTTP/1.1") else b"none"
        statuses[status] = statuses.get(status, 0) + 1
        assert b"connection: close" in answer.lower(), answer[:300]
    # /v1: 413; the runtime call answers its failure body (spec 7) with 400
    assert statuses == {b"413": 200, b"400": 100}, statuses

    def readings() -> Iterator[int]:
        for _ in range(100):
            yield open_fds(pid)
            time.sleep(0.1)

    fds_after = settled(readings(), fds_before + 2)
    rss_after = rss_mib(pid)
    print(f"\n300 oversized: fds {fds_before} -> {fds_after}, "
          f"RSS {rss_before:.1f} -> {rss_after:.1f} MiB, answers {statuses}")
    assert fds_after <= fds_before + 2
    assert rss_after - rss_before < 50


def test_requests_and_httpx_see_the_413(server: Server, key: str) -> None:
    body = b"x" * DECLARED
    headers = {**auth(key), "Content-Type": "application/json"}
    for _ in range(3):
        r = requests.post(f"{server.url}/v1/products", data=body, headers=headers, timeout=30)
        assert r.status_code == 413, r.text
        assert r.headers["connection"] == "close"
        assert r.json()["error"] == "payload_too_large"
        h = httpx.post(f"{server.url}/v1/products", content=body, headers=headers, timeout=30)
        assert h.status_code == 413, h.text
        assert h.json()["error"] == "payload_too_large"
        upload = httpx.post(f"{server.url}/v1/packages/versions", content=body, timeout=30,
                            params={"product_id": "p", "version": "1"}, headers=auth(key))
        assert upload.status_code == 413, upload.text


def test_a_chunked_body_is_cut_at_the_limit(server: Server, key: str) -> None:
    sent = 0

    def pieces() -> Iterator[bytes]:
        nonlocal sent
        for _ in range(DECLARED // 65536):
            sent += 65536
            yield b"x" * 65536

    r = httpx.post(f"{server.url}/v1/packages/versions", content=pieces(), timeout=30,
                   params={"product_id": "p", "version": "1"}, headers=auth(key))
    assert r.status_code == 413, r.text
    assert r.json()["error"] == "payload_too_large"
    assert "transfer-encoding" not in r.request.headers or sent <= DECLARED
    assert "Traceback" not in server.log()
