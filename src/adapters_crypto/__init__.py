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


class _Kek:
    """What one key-encryption key derives: the AEADs that seal license keys (and webhook
    secrets) and stored copies, and the fingerprint the database names it by."""

    def __init__(self, kek: bytes) -> None:
        if len(kek) != 32:
            raise ValueError("the key-encryption key must be 32 bytes")
        self.raw = kek
        self.fingerprint = hmac.digest(kek, FINGERPRINT_LABEL, "sha256").hex()
        self.keys = AESGCM(hmac.digest(kek, b"licore license-key encryption", "sha256"))
        # Stored copies carry a buyer's key inside them: a key of their own, so neither
        # kind of ciphertext can be passed off as the other.
        self.blobs = AESGCM(hmac.digest(kek, b"licore stored-copy encryption", "sha256"))
        # What seals the look-up root in the database after a rotation (see AesGcmKeyVault).
        self.roots = AESGCM(hmac.digest(kek, b"licore look-up root wrapping", "sha256"))


def _seal(aead: AESGCM, data: bytes, associated: str) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return KEY_VERSION + nonce + aead.encrypt(nonce, data, associated.encode())


def _open(aead: AESGCM, sealed: bytes, associated: str) -> bytes | None:
    """The plain bytes, or None when `sealed` was not made by `aead` for `associated`."""
    if sealed[:1] != KEY_VERSION:
        return None
    nonce, body = sealed[1:1 + NONCE_BYTES], sealed[1 + NONCE_BYTES:]
    try:
        return aead.decrypt(nonce, body, associated.encode())
    except InvalidTag:
        return None


ROOT_CONTEXT = "look-up root"


class AesGcmKeyVault:
    """License keys encrypted under a key-encryption key (KEK) from configuration.

    The KEK derives the keys that encrypt (license keys and webhook secrets; stored copies);
    the look-up digest's key derives from the *look-up root*, which is the first KEK the
    database was made with and stays so across rotations (the database keeps it sealed under
    the current KEK once one has been rotated): buyers' keys are found by the same digests
    and their copies keep the same marks after a rotation. The license id is the associated
    data: a ciphertext moved to another row does not decrypt.

    `previous`: a second KEK this process also opens with, for a rotation's window
    (`LICORE_KEK_PREVIOUS`, docs/operators.md "Rotating the key-encryption key"). Which of
    the two seals is the one the database names (`adopt`): until the rotation that is the
    previous one, so hosts not yet given the new key open everything sealed meanwhile.
    """

    def __init__(self, kek: bytes, previous: bytes | None = None) -> None:
        self._current = _Kek(kek)
        self._ring = [self._current] + ([_Kek(previous)] if previous is not None else [])
        self._sealing = self._current
        self._digest_key = b""
        self._root(kek)

    def _root(self, root: bytes) -> None:
        self._root_bytes = root
        self._digest_key = hmac.digest(root, b"licore license-key lookup", "sha256")

    def fingerprint(self) -> str:
        """Names the KEK (`LICORE_KEK`) without revealing it: what the database records."""
        return self._current.fingerprint

    def fingerprints(self) -> tuple[str, ...]:
        """Every KEK this process holds, the current one first."""
        return tuple(k.fingerprint for k in self._ring)

    def adopt(self, fingerprint: str, sealed_root: bytes | None) -> None:
        """Seal under the held KEK the database names, and look up with the look-up root it
        keeps sealed under that KEK (none kept: the root is that KEK itself)."""
        named = next(k for k in self._ring if k.fingerprint == fingerprint)
        root = named.raw if sealed_root is None else _open(named.roots, sealed_root,
                                                           ROOT_CONTEXT)
        if root is None:
            raise _unreadable()
        self._sealing = named
        self._root(root)

    def sealed_root(self, under: AesGcmKeyVault) -> bytes:
        """This vault's look-up root sealed under `under`'s KEK: what a rotation to it
        stores beside the data."""
        return _seal(under._current.roots, self._root_bytes, ROOT_CONTEXT)

    def encrypt(self, license_key: str, license_id: str) -> bytes:
        return _seal(self._sealing.keys, license_key.encode(), license_id)

    def decrypt(self, ciphertext: bytes, license_id: str) -> str:
        if ciphertext[:1] != KEY_VERSION:
            raise ValueError("unknown license key encryption version")
        for kek in self._held():
            opened = _open(kek.keys, ciphertext, license_id)
            if opened is not None:
                return opened.decode()
        raise _unreadable()

    def _held(self) -> list[_Kek]:
        """The KEKs to try, the sealing one first: nearly everything opens under it."""
        return [self._sealing, *(k for k in self._ring if k is not self._sealing)]

    def opens(self, ciphertext: bytes, license_id: str) -> bool:
        """Whether `ciphertext` was sealed under the current KEK for `license_id` (quietly)."""
        return _open(self._current.keys, ciphertext, license_id) is not None

    def sealed_here(self, ciphertext: bytes, license_id: str) -> bool:
        """Whether `ciphertext` is sealed under the KEK this vault seals with (quietly)."""
        return _open(self._sealing.keys, ciphertext, license_id) is not None

    def blob_sealed_here(self, sealed: bytes, context: str) -> bool:
        return _open(self._sealing.blobs, sealed, context) is not None

    def lookup_digest(self, license_key: str) -> str:
        return hmac.new(self._digest_key, license_key.encode(), hashlib.sha256).hexdigest()

    def encrypt_blob(self, data: bytes, context: str) -> bytes:
        # One AES-GCM call over the whole blob; `context` (which copy of which license at
        # which key generation) is the associated data, so a blob copied to another row
        # does not decrypt.
        return _seal(self._sealing.blobs, data, context)

    def decrypt_blob(self, sealed: bytes, context: str) -> bytes:
        if sealed[:1] != KEY_VERSION:
            raise ValueError("unknown stored-copy encryption version")
        for kek in self._held():
            opened = _open(kek.blobs, sealed, context)
            if opened is not None:
                return opened
        raise _unreadable()


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
