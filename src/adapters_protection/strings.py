"""Luau string literals: their values, and the per-license cipher of `encrypt_strings`."""

from __future__ import annotations

import hashlib
import hmac
import re

from adapters_protection.names import Namer
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


def quote(value: bytes) -> str:
    """A double-quoted Luau literal for `value`: printable ASCII as is, the rest escaped."""
    out = []
    for i, b in enumerate(value):
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C):
            out.append(chr(b))
        else:
            following = value[i + 1:i + 2]
            pad = 3 if following and following[0] in b"0123456789" else 1
            out.append(f"\\{b:0{pad}d}")
    return '"' + "".join(out) + '"'


_PRINTABLE_FIRST, _PRINTABLE_COUNT = 32, 95  # " " to "~"
_QUOTE_FREE = [b for b in range(32, 127) if b not in (0x22, 0x5C)]


class StringCipher:
    """A per-license keystream over printable characters.

    Printable ASCII is rotated within the printable range, so an encrypted literal is about
    as long as the original (escapes only for `"` and `\\`); other bytes (control
    characters, UTF-8 continuation bytes) pass through unchanged, which hides nothing
    worth hiding: keys, URLs and messages are printable. Each literal starts with its own
    key character; the step comes from the license secret and script path.

    The decoder caches what it decoded, so a literal inside a loop is decoded once, and it
    holds the library functions it needs from the moment the script starts (a script that
    later replaces `string` or `table` does not break it)."""

    def __init__(self, license_secret: bytes, path: str, namer: Namer) -> None:
        self._seed = hmac.new(license_secret, b"licore/encrypt_strings\0" + path.encode(),
                              hashlib.sha256).digest()
        self.step = step_of(self._seed)
        self.name = namer.fresh()
        self._count = 0
        self.used = False

    def decoder(self) -> str:
        return (f"local {self.name}=(function(b,c,j,n)local m={{}} return function(s)"
                "local v=m[s] if v==nil then local k=b(s,1) local o=n(#s-1) "
                "for i=2,#s do local x=b(s,i) if x>31 and x<127 then "
                f"x=32+(x-32-k-i*{self.step})%95 end o[i-1]=c(x) end "
                "v=j(o) m[s]=v end return v end end)"
                "(string.byte,string.char,table.concat,table.create);")

    def encode(self, value: bytes) -> str:
        """A call of the decoder that yields `value`."""
        self.used = True
        self._count += 1
        digest = hashlib.sha256(self._seed + self._count.to_bytes(4, "big")).digest()
        k = _QUOTE_FREE[digest[0] % len(_QUOTE_FREE)]
        return f"{self.name}({quote(bytes([k]) + encipher(value, k, self.step))})"


def step_of(seed: bytes) -> int:
    return 1 + seed[0] % (_PRINTABLE_COUNT - 1)


def encipher(value: bytes, k: int, step: int) -> bytes:
    return bytes(_PRINTABLE_FIRST + (b - _PRINTABLE_FIRST + k + (i + 2) * step)
                 % _PRINTABLE_COUNT if 31 < b < 127 else b for i, b in enumerate(value))


def decipher(value: bytes, k: int, step: int) -> bytes:
    return bytes(_PRINTABLE_FIRST + (b - _PRINTABLE_FIRST - k - (i + 2) * step)
                 % _PRINTABLE_COUNT if 31 < b < 127 else b for i, b in enumerate(value))


STEPS = range(1, _PRINTABLE_COUNT)  # every step a cipher can have
