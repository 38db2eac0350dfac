"""Zstandard for update files (licore.update_files): a node text compressed before it is
encrypted, so a game server fetches a fraction of it and opens it with its own native
decompressor (Roblox's `EncodingService:DecompressBuffer`). A standard frame with the content
size in its header, so a decompressor knows the output's size before it starts."""

from __future__ import annotations

import zstandard

# Node text repeats a great deal (class names, property names, numbers): level 3 takes a
# 36 MiB text to about a tenth in a few tenths of a second, once per buyer and version.
LEVEL = 3


class ZstdText:
    def compress(self, data: bytes) -> bytes:
        return zstandard.ZstdCompressor(level=LEVEL, write_content_size=True).compress(data)

    def decompress(self, data: bytes) -> bytes:
        return zstandard.ZstdDecompressor().decompress(data)
