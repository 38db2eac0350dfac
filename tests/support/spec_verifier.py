"""Independent receiver written from spec section 5; deliberately does not import licore."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any


class SpecCheckFailed(Exception):
    """`check` names the receiving step that failed: tag, decrypt, nonce or exp."""

    def __init__(self, check: str) -> None:
        super().__init__(check)
        self.check = check


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def open_envelope(license_key: str, nonce: str, cipher_hex: str, tag_hex: str) -> bytes:
    """Receiving steps 1 and 2: compare the tag, then decrypt to raw plaintext bytes."""
    session_key_hex = _hmac(license_key.encode("utf-8"), "sk|" + nonce).hex()
    key = bytes.fromhex(session_key_hex)

    expected = _hmac(key, nonce + "|tag|" + cipher_hex).hex()
    if not hmac.compare_digest(expected, tag_hex):
        raise SpecCheckFailed("tag")

    cipher = bytes.fromhex(cipher_hex)
    plain = bytearray()
    i = 0
    while len(plain) < len(cipher):
        block = _hmac(key, nonce + "|" + str(i))
        for b in block:
            if len(plain) == len(cipher):
                break
            plain.append(cipher[len(plain)] ^ b)
        i += 1
    return bytes(plain)


def verify(license_key: str, nonce: str, body: dict[str, Any], now: int) -> dict[str, Any]:
    """Run the four receiving checks on a runtime answer body; return the decrypted payload.

    `exp` is checked only when the body carries one (the `/unlock` answer).
    """
    plain = open_envelope(license_key, nonce, str(body["cipher"]), str(body["tag"]))
    try:
        payload = json.loads(plain.decode("utf-8"))
    except ValueError as exc:
        raise SpecCheckFailed("decrypt") from exc
    if not isinstance(payload, dict):
        raise SpecCheckFailed("decrypt")

    if payload.get("nonce") != nonce:
        raise SpecCheckFailed("nonce")
    if "exp" in body and now > int(body["exp"]):
        raise SpecCheckFailed("exp")
    return payload
