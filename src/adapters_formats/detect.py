"""Tell binary and XML Roblox model files apart by content, not by file name."""

import enum

from licore.builds.errors import ModelFormatError

# `<roblox!` then a fixed signature; the signature's CR/LF bytes catch text-mode mangling.
BINARY_MAGIC = b"<roblox!\x89\xff\r\n\x1a\n"
_XML_PREFIX = b"<roblox"
_BOM = b"\xef\xbb\xbf"


class ModelFormat(enum.Enum):
    BINARY = "binary"
    XML = "xml"


def detect(data: bytes) -> ModelFormat:
    """Return the format of `data`, or raise ModelFormatError."""
    if data.startswith(BINARY_MAGIC):
        return ModelFormat.BINARY
    if data.startswith(b"<roblox!"):
        raise ModelFormatError("binary magic present but signature is damaged")
    head = data[:4096]
    if head.startswith(_BOM):
        head = head[len(_BOM):]
    head = head.lstrip(b" \t\r\n")
    if head.startswith(b"<?xml"):
        end = head.find(b"?>")
        if end < 0:
            raise ModelFormatError("unterminated XML declaration")
        head = head[end + 2:].lstrip(b" \t\r\n")
    after_root = head[len(_XML_PREFIX):][:1]
    if head.startswith(_XML_PREFIX) and after_root in (b" ", b">", b"\t", b"\r", b"\n"):
        return ModelFormat.XML
    raise ModelFormatError("not a Roblox model file (no binary magic, no <roblox> root)")
