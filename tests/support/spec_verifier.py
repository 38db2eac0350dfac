"""A receiving product's checks, written from the specification's text alone (section 5).

It deliberately imports nothing from licore, so a mistake shared by the server's sealing
code and its tests cannot hide.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any


class Refused(Exception):
    def __init__(self, check: str) -> None:
        super().__init__(check)
        self.check = check


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def decrypt(license_key: str, nonce: str, cipher_hex: str, tag_hex: str) -> bytes:
    """Checks 1 and 2: the tag, then decryption."""
    # sessionKey is the hex string of HMAC(licenseKey, "sk|" || nonce); later HMACs use the
    # raw bytes of that digest as the key.
    session_hex = _hmac(license_key.encode("utf-8"), "sk|" + nonce).hex()
    session = bytes.fromhex(session_hex)
    # 1. Recompute the tag over the hex cipher and compare.
    expected = _hmac(session, nonce + "|tag|" + cipher_hex).hex()
    if not hmac.compare_digest(expected, tag_hex):
        raise Refused("tag")
    # 2. Decrypt: keystream block i = HMAC(sessionKey, nonce || "|" || i), i decimal from 0.
    cipher = bytes.fromhex(cipher_hex)
    stream = b""
    i = 0
    while len(stream) < len(cipher):
        stream += _hmac(session, nonce + "|" + str(i))
        i += 1
    return bytes(c ^ s for c, s in zip(cipher, stream, strict=False))


def verify(license_key: str, nonce: str, body: dict[str, Any], now: int | None) -> Any:
    """Returns the decrypted payload, or raises `Refused` naming the failed check.
    `now` None skips the `exp` check (for /update, which has none)."""
    plain = decrypt(license_key, nonce, body["cipher"], body["tag"])
    payload = json.loads(plain.decode("utf-8"))
    # 3. The nonce echo.
    if payload.get("nonce") != nonce:
        raise Refused("nonce")
    # 4. For /unlock, the current time has not passed exp.
    if now is not None and now > body["exp"]:
        raise Refused("exp")
    return payload
