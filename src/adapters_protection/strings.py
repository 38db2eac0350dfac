"""Luau string literals: their values, and how to write one."""

from __future__ import annotations

import re

from adapters_protection.syntax import Node

_SIMPLE = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\n": 10, "\r": 10}
_ESCAPE = re.compile(
    r"\\(?:(\d{1,3})|x([0-9a-fA-F]{2})|u\{([0-9a-fA-F]+)\}|z[ \t\n\v\f\r]*|\r\n|\n\r|(.))",
    re.DOTALL)


class BadEscape(ValueError):
    """A malformed escape sequence, which Luau refuses too."""


def decode_quoted(body: str) -> bytes:
    """The bytes a quoted (or interpolated) Luau string body denotes, as Luau reads them:
    unknown escapes stand for the character itself."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode()
        pos = m.end()
        dec, hexa, uni, other = m.groups()
        if dec is not None:
            if int(dec) > 255:
                raise BadEscape(f"decimal escape \\{dec} is over 255")
            out.append(int(dec))
        elif hexa is not None:
            out.append(int(hexa, 16))
        elif uni is not None:
            code = int(uni, 16)
            if code > 0x10FFFF:
                raise BadEscape(f"\\u{{{uni}}} is beyond Unicode")
            out += chr(code).encode("utf-8", "surrogatepass")
        elif m.group(0) in ("\\\r\n", "\\\n\r"):
            out.append(10)
        elif other is not None:
            if other in "xu":
                raise BadEscape(f"malformed \\{other} escape")
            simple = _SIMPLE.get(other)
            out += bytes([simple]) if simple is not None else other.encode()
        # \z yields nothing
    out += body[pos:].encode()
    return bytes(out)


def literal_bytes(node: Node) -> bytes:
    """The value of a plain (not interpolated) string literal node."""
    text = (node.text or b"").decode()
    if text.startswith("["):
        level = text.index("[", 1) + 1
        body = text[level:len(text) - level]
        if body.startswith("\r\n"):
            body = body[2:]
        elif body.startswith("\n"):
            body = body[1:]
        return body.encode()
    return decode_quoted(text[1:-1])


def interpolation_pieces(node: Node) -> list[tuple[int, int]]:
    """Byte ranges of the literal text of an interpolated string, between its backticks
    and `{...}` parts (empty ranges included)."""
    pieces = []
    pos = node.start_byte + 1
    for child in node.named_children:
        if child.type == "interpolation":
            pieces.append((pos, child.start_byte))
            pos = child.end_byte
    pieces.append((pos, node.end_byte - 1))
    return pieces


def quote(value: bytes, escaped: bytes = b"") -> str:
    """A double-quoted Luau literal for `value`: printable ASCII as is, the rest escaped
    (and the bytes of `escaped`)."""
    out = []
    for i, b in enumerate(value):
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) and b not in escaped:
            out.append(chr(b))
        else:
            following = value[i + 1:i + 2]
            pad = 3 if following and following[0] in b"0123456789" else 1
            out.append(f"\\{b:0{pad}d}")
    return '"' + "".join(out) + '"'


_PRINTABLE_FIRST, _PRINTABLE_COUNT = 32, 95  # " " to "~"


# The cipher of the first `encrypt_strings` (a rotation whose step stood in each copy's
# decoder, and whose key was each literal's first character). Copies made since use
# `cipher`; the tracer still tries this one on copies made before.
def decipher(value: bytes, k: int, step: int) -> bytes:
    return bytes(_PRINTABLE_FIRST + (b - _PRINTABLE_FIRST - k - (i + 2) * step)
                 % _PRINTABLE_COUNT if 31 < b < 127 else b for i, b in enumerate(value))


STEPS = range(1, _PRINTABLE_COUNT)  # every step the old cipher could have
