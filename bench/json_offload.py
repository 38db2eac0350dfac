"""Parsing a JSON body inline against parsing it on a worker thread (`asyncio.to_thread`),
for bodies of 1 KiB to 1 MiB: what `adapters_http.bodies.INLINE_JSON_BYTES` trades. Inline,
the event loop serves nothing else for the parse's whole time; offloaded, it pays the hop.

Run from the repository root: `.venv/bin/python -m bench.json_offload`.
"""

from __future__ import annotations

import asyncio
import functools
import json

from adapters_http.decoding import parse_json
from bench.timing import best, best_async

SIZES = (1024, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024)


def body(size: int) -> bytes:
    """A JSON object of short string fields, about `size` bytes long."""
    fields = {f"field{i}": "x" * 40 for i in range(size // 56)}
    return json.dumps(fields).encode()


async def main() -> None:
    hop = await best_async(lambda: asyncio.to_thread(lambda: None), 200)
    print(f"thread hop alone: {hop * 1e3:.3f} ms")
    for size in SIZES:
        raw = body(size)
        inline = best(functools.partial(parse_json, raw), 20)
        offloaded = await best_async(functools.partial(asyncio.to_thread, parse_json, raw), 20)
        print(f"{len(raw) / 1024:7.0f} KiB: inline {inline * 1e3:7.3f} ms (the loop blocked "
              f"all that time), on a thread {offloaded * 1e3:7.3f} ms")


if __name__ == "__main__":
    asyncio.run(main())
