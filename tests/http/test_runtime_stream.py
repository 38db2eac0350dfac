"""A large sealed answer is streamed in pieces whose bytes are exactly the JSON a small one
is written as."""

from __future__ import annotations

import asyncio
import json

from starlette.responses import StreamingResponse

from adapters_http.runtime import STREAM_ABOVE, _json


def test_a_large_sealed_answer_streams_the_same_json_text() -> None:
    body = {"ok": True, "version": "2.0.0", "update": True,
            "cipher": "0a" * (STREAM_ABOVE // 2 + 12345), "tag": "ff" * 32}
    response = _json(body)
    assert isinstance(response, StreamingResponse)

    async def collect() -> bytes:
        return b"".join([bytes(p) if not isinstance(p, str) else p.encode()
                         async for p in response.body_iterator])

    assert asyncio.run(collect()) == json.dumps(body, separators=(",", ":")).encode()
    small = _json({**body, "cipher": "0a"})
    assert not isinstance(small, StreamingResponse)
