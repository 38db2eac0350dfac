"""gzip for large answers: `/update`'s sealed answer and downloaded copies, when the caller
accepts it (Roblox's HttpService always sends `Accept-Encoding: gzip, deflate` and hands the
script the decoded body).

Only answers over `GZIP_ABOVE` are compressed, so the small answers of the hot calls are
written exactly as before. The body is compressed piece by piece as it is sent (no second
copy of a large answer, memory bounded by a piece), each large piece in a worker thread
(zlib releases the GIL), so the event loop keeps serving other requests meanwhile.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Final

import anyio.to_thread
import attrs
from starlette.types import Send

GZIP_ABOVE: Final = 8 * 1024  # bytes of answer; below this gzip's ~20-byte frame is not worth it
_IN_THREAD_ABOVE: Final = 64 * 1024  # a piece this large is compressed off the event loop

VARY: Final = (b"vary", b"Accept-Encoding")


@attrs.frozen
class Deflate:
    level: int
    strategy: int

    def compressor(self) -> zlib._Compress:
        # wbits 16 + 15: the gzip wrapper (header and CRC-32 trailer) around deflate
        return zlib.compressobj(self.level, zlib.DEFLATED, 16 + zlib.MAX_WBITS, 8,
                                self.strategy)


# Sealed answers are hex of random bytes: nothing repeats, so looking for repeats is wasted
# work; Huffman coding alone takes each character from 8 bits to about 4 (0.51 of the
# plaintext, twice as fast as level 1's 0.58; docs/performance.md).
SEALED: Final = Deflate(1, zlib.Z_HUFFMAN_ONLY)
# Built copies: XML models repeat a great deal, so the fastest level that looks for repeats.
FILES: Final = Deflate(1, zlib.Z_DEFAULT_STRATEGY)


def accepts_gzip(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether `Accept-Encoding` (RFC 9110 12.5.3) admits gzip: named, or `*`, with a
    weight above zero. A header that names gzip with q=0 refuses it, whatever `*` says."""
    star = False
    for name, value in headers:
        if name.lower() != b"accept-encoding":
            continue
        for item in value.decode("latin-1").split(","):
            coding, _, params = item.partition(";")
            coding = coding.strip().lower()
            if coding not in ("gzip", "x-gzip", "*"):
                continue
            weight = _weight(params)
            if coding == "*":
                star = weight
            else:
                return weight
    return star


def _weight(params: str) -> bool:
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value.strip()) > 0
            except ValueError:
                return False  # an unreadable weight is not an acceptance
    return True


def gzip_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The headers of a compressed answer: no Content-Length (its length is known only at
    the end, so the server frames it with chunked encoding), Content-Encoding and Vary."""
    kept = [(k, v) for k, v in headers if k.lower() not in (b"content-length", b"vary")]
    return [*kept, (b"content-encoding", b"gzip"), VARY]


async def send_gzip(send: Send, status: int, headers: list[tuple[bytes, bytes]],
                    pieces: Iterable[bytes | memoryview], how: Deflate) -> None:
    """Sends `pieces` as one gzip-encoded body, compressing each as it goes."""
    await send({"type": "http.response.start", "status": status,
                "headers": gzip_headers(headers)})
    compressor = how.compressor()
    for piece in pieces:
        if len(piece) > _IN_THREAD_ABOVE:
            out = await anyio.to_thread.run_sync(compressor.compress, piece)
        else:
            out = compressor.compress(piece)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
    await send({"type": "http.response.body", "body": compressor.flush()})


def slices(data: bytes | memoryview, size: int = 1 << 20) -> Iterable[memoryview]:
    """`data` in pieces of `size` bytes, as views (no copies)."""
    view = memoryview(data)
    for start in range(0, len(data), size):
        yield view[start:start + size]
