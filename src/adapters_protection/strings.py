"""Luau string-literal decoding and the `encrypt_strings` transform."""

from __future__ import annotations

import hashlib
import hmac
import re

import tree_sitter

_SIMPLE = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
           "\\": 92, '"': 34, "'": 39, "\n": 10}
_ESCAPE = re.compile(r"\\(?:(\d{1,3})|x([0-9a-fA-F]{2})|u\{([0-9a-fA-F]+)\}|z\s*|\r\n|(.))",
                     re.DOTALL)


def decode_quoted(body: str) -> bytes:
    """The bytes a quoted Luau string literal body denotes."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode()
        pos = m.end()
        dec, hexa, uni, other = m.groups()
        if dec is not None:
            out.append(int(dec))
        elif hexa is not None:
            out.append(int(hexa, 16))
        elif uni is not None:
            out += chr(int(uni, 16)).encode()
        elif m.group(0) == "\\\r\n":
            out.append(10)
        elif other is not None:
            out.append(_SIMPLE[other])
        # \z yields nothing
    out += body[pos:].encode()
    return bytes(out)


def literal_bytes(node: tree_sitter.Node) -> bytes | None:
    """The value of a plain string literal node, or None for interpolated strings."""
    text = (node.text or b"").decode()
    if text.startswith("`"):
        return None
    if text.startswith("["):
        level = text.index("[", 1) + 1
        body = text[level:len(text) - level]
        if body.startswith("\r\n"):
            body = body[2:]
        elif body.startswith("\n"):
            body = body[1:]
        return body.encode()
    return decode_quoted(text[1:-1])


def in_type(node: tree_sitter.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if "type" in parent.type:
            return True
        parent = parent.parent
    return False


class StringCipher:
    """Per-license XOR keystream; the decoder name and constants come from the secret."""

    def __init__(self, license_secret: bytes, path: str) -> None:
        seed = hmac.new(license_secret, b"encrypt_strings\0" + path.encode(),
                        hashlib.sha256).digest()
        self.name = "_" + seed[:6].hex()
        self.step = seed[6] | 1
        self._seed = seed
        self._count = 0

    def decoder(self) -> str:
        return (f"local {self.name} = function(s, k) local o = table.create(#s) "
                f"for i = 1, #s do o[i] = string.char(bit32.bxor(string.byte(s, i), "
                f"(k + i * {self.step}) % 256)) end return table.concat(o) end ")

    def encode(self, value: bytes) -> str:
        self._count += 1
        k = hashlib.sha256(self._seed + self._count.to_bytes(4, "big")).digest()[0]
        body = "".join(f"\\{(b ^ ((k + (i + 1) * self.step) % 256)):d}"
                       for i, b in enumerate(value))
        return f'({self.name}("{body}", {k}))'
