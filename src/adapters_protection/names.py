"""Generated identifiers that carry a per-license mark.

Every name the protector invents (renamed locals, the string decoder, the constant table,
dispatch state) is a stem followed by a 4-character mark: a keyed digest of the stem under a
key derived from the license secret. Anyone holding the secret can tell its names from any
other name, without the original source or the script's path; nobody without it can forge or
recognise them. The stems differ per license and per script, so two buyers' copies differ.
"""

from __future__ import annotations

import hashlib
import hmac
import string
from collections.abc import Iterable

from adapters_protection.syntax import RESERVED

MARK_LENGTH = 4
_LETTERS = string.ascii_letters
_ALPHABET = string.ascii_letters + string.digits
_TRIES_PER_LENGTH = 8
# Globals the generated string decoder reads, besides the words no name may be.
_NEVER = RESERVED | {"string", "table"}


def mark_key(license_secret: bytes) -> bytes:
    return hmac.new(license_secret, b"licore/trace-mark/v1", hashlib.sha256).digest()


MARK_SPACE = len(_ALPHABET) ** MARK_LENGTH


def mark_hasher(key: bytes) -> hashlib.blake2b:
    """The keyed digest behind `mark`, to copy when checking many words."""
    return hashlib.blake2b(key=key, digest_size=8)


def mark_value(suffix: str) -> int:
    """The number a mark spells (the inverse of `mark`'s digits), -1 if it cannot be one."""
    value = 0
    for ch in reversed(suffix):
        digit = _ALPHABET.find(ch)
        if digit < 0:
            return -1
        value = value * len(_ALPHABET) + digit
    return value


def mark(key: bytes, stem: str) -> str:
    value = int.from_bytes(hashlib.blake2b(stem.encode(), key=key, digest_size=8).digest(), "big")
    chars = []
    for _ in range(MARK_LENGTH):
        value, digit = divmod(value, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "".join(chars)


def carries_mark(key: bytes, name: str) -> bool:
    """Whether `name` is a name generated for the license whose mark key is `key`."""
    stem = name[:-MARK_LENGTH]
    return len(stem) >= 2 and hmac.compare_digest(mark(key, stem), name[-MARK_LENGTH:])


class Namer:
    """Fresh marked names for one script of one license, none equal to a name in `taken`."""

    def __init__(self, license_secret: bytes, path: str, taken: Iterable[str]) -> None:
        self._seed = hmac.new(license_secret, b"licore/names\0" + path.encode(),
                              hashlib.sha256).digest()
        self._key = mark_key(license_secret)
        self._taken = set(taken) | _NEVER
        self._counter = 0
        self._stem_length = 2

    def _stem(self) -> str:
        self._counter += 1
        digest = hashlib.blake2b(self._counter.to_bytes(8, "big"), key=self._seed).digest()
        chars = [_LETTERS[digest[0] % len(_LETTERS)]]
        chars += [_ALPHABET[b % len(_ALPHABET)] for b in digest[1:self._stem_length]]
        return "".join(chars)

    def fresh(self) -> str:
        while True:
            for _ in range(_TRIES_PER_LENGTH):
                name = (stem := self._stem()) + mark(self._key, stem)
                if name not in self._taken:
                    self._taken.add(name)
                    return name
            self._stem_length += 1

    def number(self, bits: int = 24) -> int:
        """A keyed number, for dispatch states and the like."""
        self._counter += 1
        digest = hashlib.blake2b(b"n" + self._counter.to_bytes(8, "big"), key=self._seed).digest()
        return int.from_bytes(digest[:8], "big") % (1 << bits)

    def shuffle(self, items: list[str]) -> list[str]:
        """`items` (distinct) in an order keyed by the license and script."""
        return sorted(items, key=lambda s: hmac.new(self._seed, s.encode(),
                                                    hashlib.sha256).digest())
