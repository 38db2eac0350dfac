"""Sealing scheme for runtime `/unlock` and `/update` answers (spec section 5)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import attrs

_BLOCK = 32


@attrs.frozen
class Sealed:
    """A sealed envelope: lower-case hex ciphertext and tag."""

    cipher: str
    tag: str


class SealError(Exception):
    """Verification failed; `reason` names the first check that failed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def session_key(license_key: str, nonce: str) -> bytes:
    """Raw digest bytes of HMAC(licenseKey, "sk|"+nonce); its hex is the spec's sessionKey."""
    return hmac.new(license_key.encode(), b"sk|" + nonce.encode(), hashlib.sha256).digest()


def keystream(key: bytes, nonce: str, length: int) -> bytes:
    """Concatenated blocks HMAC(sessionKey, nonce+"|"+i), cut to `length` bytes."""
    # One keyed object copied per block skips re-deriving the HMAC pads each time.
    base = hmac.new(key, nonce.encode() + b"|", hashlib.sha256)
    blocks = (length + _BLOCK - 1) // _BLOCK
    out = bytearray()
    for i in range(blocks):
        h = base.copy()
        h.update(str(i).encode())
        out += h.digest()
    return bytes(out[:length])


def _xor(data: bytes, stream: bytes) -> bytes:
    if not data:
        return b""
    mixed = int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")
    return mixed.to_bytes(len(data), "big")


def _tag(key: bytes, nonce: str, cipher_hex: str) -> str:
    msg = (nonce + "|tag|" + cipher_hex).encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


def seal(license_key: str, nonce: str, plaintext: bytes) -> Sealed:
    """Encrypt and tag `plaintext` for the holder of `license_key`."""
    key = session_key(license_key, nonce)
    cipher_hex = _xor(plaintext, keystream(key, nonce, len(plaintext))).hex()
    return Sealed(cipher=cipher_hex, tag=_tag(key, nonce, cipher_hex))


def open_sealed(license_key: str, nonce: str, cipher_hex: str, tag_hex: str) -> bytes:
    """Check the tag (constant time) first, then decrypt; raise `SealError` on a bad tag."""
    key = session_key(license_key, nonce)
    # The tag covers the hex text exactly as received, so it is checked before parsing it.
    expected = _tag(key, nonce, cipher_hex)
    if not hmac.compare_digest(expected.encode(), tag_hex.encode()):
        raise SealError("tag_mismatch")
    try:
        cipher = bytes.fromhex(cipher_hex)
    except ValueError:
        raise SealError("tag_mismatch") from None
    return _xor(cipher, keystream(key, nonce, len(cipher)))


def verify_payload(
    license_key: str, nonce: str, cipher: str, tag: str, now: int, exp: int | None
) -> dict[str, Any]:
    """All four receiving checks in the spec's order; `exp` is None for `/update`."""
    plaintext = open_sealed(license_key, nonce, cipher, tag)
    try:
        payload = json.loads(plaintext.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise SealError("not_json") from None
    if not isinstance(payload, dict):
        raise SealError("not_json")
    if payload.get("nonce") != nonce:
        raise SealError("nonce_mismatch")
    if exp is not None and now > exp:
        raise SealError("expired")
    return payload
