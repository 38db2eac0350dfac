"""Secrets at rest and randomness: AES-256-GCM license keys, keyed digests, Argon2id passwords."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import time

from argon2 import PasswordHasher as _Argon2
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from licore.errors import KeyUnreadable

NONCE_BYTES = 12
KEY_VERSION = b"\x01"
# What the database keeps to recognise its key-encryption key: an HMAC of this constant
# under the KEK, one more derived value beside the two keys above (it tells nothing about
# them, and nothing about the KEK).
FINGERPRINT_LABEL = b"licore key-encryption-key fingerprint"
log = logging.getLogger("licore.keys")


def _unreadable() -> KeyUnreadable:
    # Said once per failed opening, without the key, the ciphertext or the row: enough for
    # the operator to look at LICORE_KEK.
    log.error("a stored key does not open under this process's key-encryption key "
              "(LICORE_KEK, or the kek file in the data directory)")
    return KeyUnreadable()


class AesGcmKeyVault:
    """License keys encrypted under a key-encryption key (KEK) from configuration.

    The KEK is split into two derived keys, one to encrypt and one for the look-up digest, so
    the digest reveals nothing usable about the encryption key. The license id is the
    associated data: a ciphertext moved to another row does not decrypt.
    """

    def __init__(self, kek: bytes) -> None:
        if len(kek) != 32:
            raise ValueError("the key-encryption key must be 32 bytes")
        self._fingerprint = hmac.digest(kek, FINGERPRINT_LABEL, "sha256").hex()
        self._aead = AESGCM(hmac.digest(kek, b"licore license-key encryption", "sha256"))
        self._digest_key = hmac.digest(kek, b"licore license-key lookup", "sha256")
        # Stored copies carry a buyer's key inside them: a key of their own, so neither
        # kind of ciphertext can be passed off as the other.
        self._blobs = AESGCM(hmac.digest(kek, b"licore stored-copy encryption", "sha256"))

    def encrypt(self, license_key: str, license_id: str) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, license_key.encode(), license_id.encode())
        return KEY_VERSION + nonce + sealed

    def decrypt(self, ciphertext: bytes, license_id: str) -> str:
        if ciphertext[:1] != KEY_VERSION:
            raise ValueError("unknown license key encryption version")
        nonce, sealed = ciphertext[1:1 + NONCE_BYTES], ciphertext[1 + NONCE_BYTES:]
        try:
            return self._aead.decrypt(nonce, sealed, license_id.encode()).decode()
        except InvalidTag:
            raise _unreadable() from None

    def fingerprint(self) -> str:
        """Names the KEK without revealing it: what the database records (licore_cli.kek)."""
        return self._fingerprint

    def opens(self, ciphertext: bytes, license_id: str) -> bool:
        """Whether `ciphertext` was sealed under this KEK for `license_id` (quietly)."""
        if ciphertext[:1] != KEY_VERSION:
            return False
        nonce, sealed = ciphertext[1:1 + NONCE_BYTES], ciphertext[1 + NONCE_BYTES:]
        try:
            self._aead.decrypt(nonce, sealed, license_id.encode())
        except InvalidTag:
            return False
        return True

    def lookup_digest(self, license_key: str) -> str:
        return hmac.new(self._digest_key, license_key.encode(), hashlib.sha256).hexdigest()

    def encrypt_blob(self, data: bytes, context: str) -> bytes:
        # One AES-GCM call over the whole blob; `context` (which copy of which license at
        # which key generation) is the associated data, so a blob copied to another row
        # does not decrypt.
        nonce = os.urandom(NONCE_BYTES)
        return KEY_VERSION + nonce + self._blobs.encrypt(nonce, data, context.encode())

    def decrypt_blob(self, sealed: bytes, context: str) -> bytes:
        if sealed[:1] != KEY_VERSION:
            raise ValueError("unknown stored-copy encryption version")
        nonce, body = sealed[1:1 + NONCE_BYTES], sealed[1 + NONCE_BYTES:]
        try:
            return self._blobs.decrypt(nonce, body, context.encode())
        except InvalidTag:
            raise _unreadable() from None


class Argon2Passwords:
    """Argon2id digests (argon2-cffi's defaults follow RFC 9106's recommendations)."""

    def __init__(self) -> None:
        self._hasher = _Argon2()

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, digest: str, password: str) -> bool:
        try:
            return self._hasher.verify(digest, password)
        except (VerificationError, InvalidHashError):
            return False


class SystemRandom:
    def token_bytes(self, n: int) -> bytes:
        return secrets.token_bytes(n)


class SystemClock:
    def now(self) -> int:
        return int(time.time())

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000
