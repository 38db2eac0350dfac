"""Which `Accept-Encoding` headers admit gzip, and a large sealed answer compressed piece by
piece as it is sent (never held whole a second time)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
from typing import Any

import pytest

from adapters_http.compression import accepts_gzip
from adapters_http.runtime import STREAM_ABOVE, _send_json


@pytest.mark.parametrize(("header", "admitted"), [
    ("gzip, deflate", True),  # what Roblox's HttpService sends
    ("gzip", True),
    ("GZIP;q=0.5", True),
    ("deflate, gzip ; q=1.0", True),
    ("x-gzip", True),
    ("*", True),
    ("br, *;q=0.1", True),
    ("gzip;q=0", False),
    ("gzip;q=0.000", False),
    ("gzip;q=0, *", False),  # named with q=0 refuses it, whatever `*` says
    ("*;q=0", False),
    ("identity", False),
    ("deflate, br", False),
    ("gzip;q=nonsense", False),
    ("", False),
])
def test_accept_encoding(header: str, admitted: bool) -> None:
    assert accepts_gzip([(b"accept-encoding", header.encode())]) is admitted


def test_no_header_admits_nothing() -> None:
    assert accepts_gzip([(b"content-type", b"application/json")]) is False


def test_a_large_sealed_answer_is_compressed_in_pieces_as_it_goes() -> None:
    cipher = os.urandom(3 * STREAM_ABOVE // 2).hex()
    body = {"ok": True, "version": "2.0.0", "update": True, "cipher": cipher, "tag": "ff" * 32}
    messages: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        messages.append(message)

    scope = {"headers": [(b"accept-encoding", b"gzip, deflate")]}
    asyncio.run(_send_json(send, body, scope=scope))
    start, *pieces = messages
    headers = dict(start["headers"])
    assert headers[b"content-encoding"] == b"gzip" and headers[b"vary"] == b"Accept-Encoding"
    assert b"content-length" not in headers
    # One compressed piece per cipher piece sent (the answer is 3 MiB of hex), none of them
    # larger than the piece it came from, and the last one closes the stream.
    assert len(pieces) >= 3 and all(p["more_body"] for p in pieces[:-1])
    assert not pieces[-1].get("more_body", False)
    assert max(len(p["body"]) for p in pieces) <= STREAM_ABOVE
    text = gzip.decompress(b"".join(p["body"] for p in pieces))
    assert text == json.dumps(body, separators=(",", ":")).encode()
