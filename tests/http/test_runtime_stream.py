"""A large sealed answer is streamed in pieces whose bytes are exactly the JSON a small one
is written as."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from adapters_http.runtime import STREAM_ABOVE, _send_json


def sent(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        messages.append(message)

    asyncio.run(_send_json(send, body))
    return messages


def test_a_large_sealed_answer_streams_the_same_json_text() -> None:
    body = {"ok": True, "version": "2.0.0", "update": True,
            "cipher": "0a" * (STREAM_ABOVE // 2 + 12345), "tag": "ff" * 32}
    start, *pieces = sent(body)
    assert b"content-length" not in dict(start["headers"])
    assert len(pieces) > 2 and all(p["more_body"] for p in pieces[:-1])
    assert not pieces[-1].get("more_body", False)
    whole = json.dumps(body, separators=(",", ":")).encode()
    assert b"".join(p["body"] for p in pieces) == whole


def test_a_small_answer_is_one_piece_with_its_length() -> None:
    body = {"ok": True, "exp": 1790000000, "cipher": "0a", "tag": "ff" * 32}
    start, piece = sent(body)
    whole = json.dumps(body, separators=(",", ":")).encode()
    assert piece["body"] == whole
    assert dict(start["headers"])[b"content-length"] == str(len(whole)).encode()
