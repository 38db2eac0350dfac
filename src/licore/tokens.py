"""The shapes of the secrets licore hands out, and the ids it makes.

API keys (contract 7): a readable prefix telling the kind, about 30 random base62
characters, then 6 base62 characters of CRC32 over the rest, so secret scanners can recognise
a leaked key without a database. License keys (contract 5): `lk_` and 40 base62 characters,
safe inside any Luau string literal. Only randomness from the port is used, so tests can make
them deterministic.
"""

from __future__ import annotations

import hashlib
import zlib

from licore.scopes import KeyKind

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
API_KEY_PREFIX = {KeyKind.STUDIO: "lcs_", KeyKind.LIBRARY: "lcl_"}
API_KEY_RANDOM = 30
CHECKSUM_LEN = 6
LICENSE_KEY_PREFIX = "lk_"
LICENSE_KEY_RANDOM = 40
DEVICE_CODE_RANDOM = 43


def base62(data: bytes, length: int) -> str:
    """`length` base62 characters from enough random bytes (rejection-free by big modulus)."""
    number = int.from_bytes(data, "big")
    out = []
    for _ in range(length):
        number, digit = divmod(number, 62)
        out.append(BASE62[digit])
    return "".join(out)


def random_bytes_for(length: int) -> int:
    """How many random bytes give `length` base62 digits with negligible bias."""
    return (length * 6 + 7) // 8 + 16


def _checksum(body: str) -> str:
    return base62(zlib.crc32(body.encode()).to_bytes(4, "big"), CHECKSUM_LEN)


def make_api_key(kind: KeyKind, random: bytes) -> str:
    body = API_KEY_PREFIX[kind] + base62(random, API_KEY_RANDOM)
    return body + _checksum(body)


def api_key_shape_ok(key: str) -> bool:
    """True when `key` looks like one of ours (prefix, length, checksum); cheap to reject junk."""
    if not any(key.startswith(p) for p in API_KEY_PREFIX.values()):
        return False
    body, check = key[:-CHECKSUM_LEN], key[-CHECKSUM_LEN:]
    return len(key) == 4 + API_KEY_RANDOM + CHECKSUM_LEN and _checksum(body) == check


def api_key_digest(key: str) -> str:
    """Only this SHA-256 digest is stored; the key itself is shown once."""
    return hashlib.sha256(key.encode()).hexdigest()


def make_license_key(random: bytes) -> str:
    return LICENSE_KEY_PREFIX + base62(random, LICENSE_KEY_RANDOM)


def make_device_code(random: bytes) -> str:
    return base62(random, DEVICE_CODE_RANDOM)


def device_code_digest(code: str) -> str:
    return hashlib.sha256(b"device|" + code.encode()).hexdigest()


def make_user_code(random: bytes, alphabet: str, length: int) -> str:
    number = int.from_bytes(random, "big")
    out = []
    for _ in range(length):
        number, digit = divmod(number, len(alphabet))
        out.append(alphabet[digit])
    return "".join(out)


def make_id(prefix: str, now_ms: int, random: bytes) -> str:
    """Ids sort by creation time (for stable cursors), then by 10 random base62 characters."""
    return f"{prefix}_{base62(now_ms.to_bytes(8, 'big'), 8)[::-1]}{base62(random, 10)}"
