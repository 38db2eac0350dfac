"""The sealed envelope of `/unlock` and `/update` (spec section 5), pure.

    sessionKey = hex(HMAC(licenseKey, "sk|" + nonce)); later HMACs key on its raw 32 bytes
    block i    = HMAC(sessionKey, nonce + "|" + str(i)), i = 0, 1, 2, ...
    cipher     = plaintext XOR (block 0 || block 1 || ...), sent as lower-case hex
    tag        = hex(HMAC(sessionKey, nonce + "|tag|" + cipherHex))

Strings are UTF-8. A receiver checks, in order: the tag (constant time), then decrypts, then
the nonce echo, then `exp` for /unlock.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import attrs

BLOCK = 32


@attrs.frozen
class Sealed:
    cipher: str
    tag: str


class SealError(Exception):
    """A refused envelope; `reason` names the first check that failed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


TAG_MISMATCH = "tag_mismatch"
NOT_JSON = "not_json"
NONCE_MISMATCH = "nonce_mismatch"
EXPIRED = "expired"


def session_key(license_key: str, nonce: str) -> bytes:
    # The specification names the hex string, but keys later HMACs on the raw digest.
    return hmac.digest(license_key.encode(), f"sk|{nonce}".encode(), "sha256")


def keystream(key: bytes, nonce: str, length: int) -> bytes:
    base = hmac.new(key, digestmod=hashlib.sha256)
    prefix = f"{nonce}|".encode()
    blocks = []
    for i in range((length + BLOCK - 1) // BLOCK):
        h = base.copy()
        h.update(prefix + str(i).encode())
        blocks.append(h.digest())
    return b"".join(blocks)[:length]


def _xor(data: bytes, stream: bytes) -> bytes:
    n = len(data)
    if n == 0:
        return b""
    mixed = int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")
    return mixed.to_bytes(n, "big")


def _tag(key: bytes, nonce: str, cipher_hex: str) -> str:
    return hmac.new(key, f"{nonce}|tag|{cipher_hex}".encode(), hashlib.sha256).hexdigest()


def seal(license_key: str, nonce: str, plaintext: bytes) -> Sealed:
    key = session_key(license_key, nonce)
    cipher_hex = _xor(plaintext, keystream(key, nonce, len(plaintext))).hex()
    return Sealed(cipher_hex, _tag(key, nonce, cipher_hex))


def open_sealed(license_key: str, nonce: str, cipher_hex: str, tag_hex: str) -> bytes:
    """Checks 1 and 2: the tag first, and only then decryption."""
    key = session_key(license_key, nonce)
    if not hmac.compare_digest(_tag(key, nonce, cipher_hex).encode(),
                               tag_hex.lower().encode()):
        raise SealError(TAG_MISMATCH)
    try:
        data = bytes.fromhex(cipher_hex)
    except ValueError:
        raise SealError(TAG_MISMATCH) from None
    return _xor(data, keystream(key, nonce, len(data)))


def verify_payload(license_key: str, nonce: str, cipher_hex: str, tag_hex: str, now: int,
                   exp: int | None) -> Any:
    """All four checks of a receiving product, in the specification's order."""
    plain = open_sealed(license_key, nonce, cipher_hex, tag_hex)
    try:
        payload = json.loads(plain)
    except (ValueError, UnicodeDecodeError):
        raise SealError(NOT_JSON) from None
    if not isinstance(payload, dict) or payload.get("nonce") != nonce:
        raise SealError(NONCE_MISMATCH)
    if exp is not None and now > exp:
        raise SealError(EXPIRED)
    return payload
