"""Binary model framing: header and chunks, decompressed under hard size caps."""

import struct

import attrs
import lz4.block
import zstandard

from adapters_formats.detect import BINARY_MAGIC
from adapters_formats.model_limits import MAX_TOTAL_DECODED
from licore.builds.errors import ModelFormatError

MAX_TOTAL_DECOMPRESSED = MAX_TOTAL_DECODED
MAX_RATIO = 1024  # per chunk; real chunks compress far less than this
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_HEADER = struct.Struct("<HiiQ")
_CHUNK = struct.Struct("<4sIII")


@attrs.frozen
class Chunk:
    name: bytes
    data: bytes  # decompressed payload
    raw: bytes  # the chunk exactly as stored, header included, for exact rewrites


@attrs.frozen
class Framing:
    version: int
    class_count: int
    instance_count: int
    chunks: tuple[Chunk, ...]


def _zstd_bounded(payload: bytes, size: int) -> bytes:
    # A frame's own content size header is not to be trusted for allocation: stream, and
    # stop one byte past what the chunk header promised.
    out = bytearray()
    with zstandard.ZstdDecompressor().stream_reader(payload) as reader:
        while len(out) <= size:
            piece = reader.read(min(1 << 20, size + 1 - len(out)))
            if not piece:
                break
            out += piece
    return bytes(out)


def _decompress(payload: bytes, size: int) -> bytes:
    try:
        if payload.startswith(_ZSTD_MAGIC):
            out = _zstd_bounded(payload, size)
        else:
            out = lz4.block.decompress(payload, uncompressed_size=size)
    except (zstandard.ZstdError, lz4.block.LZ4BlockError, ValueError) as err:
        raise ModelFormatError(f"chunk does not decompress: {err}") from None
    if len(out) != size:
        raise ModelFormatError("decompressed chunk size differs from its header")
    return bytes(out)


@attrs.frozen
class StoredChunk:
    """A chunk's place in the file, its limits checked, its payload not yet inflated."""

    name: bytes
    start: int  # where the chunk header begins
    body: int  # where the stored payload begins
    end: int
    compressed: bool
    size: int  # decompressed size, from the header


def scan_framing(data: bytes) -> tuple[int, int, int, list[StoredChunk]]:
    """Header counts and every chunk's place, checked against the size and ratio limits
    before anything is inflated; refuse malformed input."""
    if not data.startswith(BINARY_MAGIC):
        raise ModelFormatError("missing binary model magic")
    pos = len(BINARY_MAGIC)
    if len(data) < pos + _HEADER.size:
        raise ModelFormatError("truncated header")
    version, classes, instances, _ = _HEADER.unpack_from(data, pos)
    if classes < 0 or instances < 0:
        raise ModelFormatError("negative class or instance count")
    pos += _HEADER.size
    chunks: list[StoredChunk] = []
    total = 0
    while True:
        if len(data) < pos + _CHUNK.size:
            raise ModelFormatError("truncated chunk header (no END chunk)")
        name, clen, ulen, _ = _CHUNK.unpack_from(data, pos)
        start = pos + _CHUNK.size
        stored = clen if clen else ulen
        if start + stored > len(data):
            raise ModelFormatError("chunk length runs past the end of the data")
        total += ulen
        if total > MAX_TOTAL_DECOMPRESSED:
            raise ModelFormatError("decompressed size exceeds the limit")
        if clen and ulen > max(clen, 64) * MAX_RATIO:
            raise ModelFormatError("chunk compression ratio is implausible")
        chunks.append(StoredChunk(name, pos, start, start + stored, bool(clen), ulen))
        pos = start + stored
        if name == b"END\x00":
            return version, classes, instances, chunks


def inflate(data: bytes, chunk: StoredChunk) -> bytes:
    """A scanned chunk's payload, decompressed and held to the size its header promised."""
    payload = data[chunk.body:chunk.end]
    return _decompress(payload, chunk.size) if chunk.compressed else payload


def read_framing(data: bytes) -> Framing:
    """Split a binary model into decompressed chunks; refuse malformed input."""
    version, classes, instances, stored = scan_framing(data)
    chunks = tuple(Chunk(name=c.name, data=inflate(data, c), raw=data[c.start:c.end])
                   for c in stored)
    return Framing(version, classes, instances, chunks)


def chunk_bytes(name: bytes, data: bytes, *, compress: bool = True) -> bytes:
    """One chunk as stored: LZ4-compressed like Studio's own files, except END."""
    if compress and data:
        packed: bytes = lz4.block.compress(data, store_size=False)
        return _CHUNK.pack(name, len(packed), len(data), 0) + packed
    return _CHUNK.pack(name, 0, len(data), 0) + data


def file_bytes(class_count: int, instance_count: int, chunks: list[bytes]) -> bytes:
    header = BINARY_MAGIC + _HEADER.pack(0, class_count, instance_count, 0)
    end = chunk_bytes(b"END\x00", b"</roblox>", compress=False)
    return b"".join([header, *chunks, end])
