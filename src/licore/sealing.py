"""Sealing scheme for runtime `/unlock` and `/update` answers (spec section 5)."""

from __future__ import annotations

import hashlib
import hmac
import importlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import attrs

if TYPE_CHECKING:
    from _hashlib import HASH

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


_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))
Pads = tuple["HASH", "HASH"]  # SHA-256 states that have taken the key's inner and outer pad


Sha256 = Callable[[bytes], "HASH"]


def _short_message_sha256() -> Sha256:
    """CPython's own SHA-256 (`_sha2` from 3.12, `_sha256` before), else OpenSSL's.

    A keystream block hashes two short messages; for those the cost is the hash object's
    copy, update and digest calls, which are about a third cheaper in CPython's module than
    through OpenSSL's EVP layer (a 1 MiB seal: 87 -> 64 ms, `bench.sealing`). OpenSSL stays
    for long messages (the tag over the whole cipher text), where its SHA instructions are
    several times faster. Both compute the same SHA-256, so the output is the same either way."""
    for name in ("_sha2", "_sha256"):
        try:
            return cast(Sha256, importlib.import_module(name).sha256)
        except (ImportError, AttributeError):
            continue
    return hashlib.sha256


_SHORT = _short_message_sha256()
_LONG = 4096  # a message at least this long is hashed through OpenSSL


def _pads(key: bytes, new: Sha256 = hashlib.sha256) -> Pads:
    # HMAC by hand (RFC 2104): the two padded-key states are made once per key and copied
    # for each message. `hmac.new` makes an OpenSSL HMAC context per call, which costs
    # more than the hashing for the short messages sealing makes.
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    padded = key.ljust(64, b"\0")
    return new(padded.translate(_IPAD)), new(padded.translate(_OPAD))


def _mac(pads: Pads, *parts: bytes) -> HASH:
    """HMAC-SHA-256 of the concatenated `parts`, as a finished hash object."""
    inner = pads[0].copy()
    for part in parts:
        inner.update(part)
    outer = pads[1].copy()
    outer.update(inner.digest())
    return outer


def session_key(license_key: str, nonce: str) -> bytes:
    """Raw digest bytes of HMAC(licenseKey, "sk|"+nonce); its hex is the spec's sessionKey."""
    return _mac(_pads(license_key.encode(), _SHORT), b"sk|", nonce.encode()).digest()


def keystream(key: bytes, nonce: str, length: int) -> bytes:
    """Concatenated blocks HMAC(sessionKey, nonce+"|"+i), cut to `length` bytes."""
    return _keystream(_pads(key, _SHORT), nonce, length)


def _keystream(pads: Pads, nonce: str, length: int) -> bytes:
    # The inner state also takes the nonce once, so each block costs two state copies and
    # two short updates, with no Python-level HMAC object per block.
    inner = pads[0].copy()
    inner.update(nonce.encode() + b"|")
    inner_copy, outer_copy = inner.copy, pads[1].copy

    def block(counter: bytes) -> bytes:
        h = inner_copy()
        h.update(counter)
        o = outer_copy()
        o.update(h.digest())
        return o.digest()

    blocks = (length + _BLOCK - 1) // _BLOCK
    stream = b"".join(map(block, [b"%d" % i for i in range(blocks)]))
    return stream[:length] if len(stream) != length else stream


def _xor(data: bytes, stream: bytes) -> bytes:
    if not data:
        return b""
    mixed = int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")
    return mixed.to_bytes(len(data), "big")


def _tag(key: bytes, short: Pads, nonce: str, cipher_hex: str) -> str:
    pads = short if len(cipher_hex) < _LONG else _pads(key)
    return _mac(pads, (nonce + "|tag|").encode(), cipher_hex.encode()).hexdigest()


def seal(license_key: str, nonce: str, plaintext: bytes) -> Sealed:
    """Encrypt and tag `plaintext` for the holder of `license_key`."""
    key = session_key(license_key, nonce)
    pads = _pads(key, _SHORT)
    cipher_hex = _xor(plaintext, _keystream(pads, nonce, len(plaintext))).hex()
    return Sealed(cipher=cipher_hex, tag=_tag(key, pads, nonce, cipher_hex))


def open_sealed(license_key: str, nonce: str, cipher_hex: str, tag_hex: str) -> bytes:
    """Check the tag (constant time) first, then decrypt; raise `SealError` on a bad tag."""
    key = session_key(license_key, nonce)
    pads = _pads(key, _SHORT)
    # The tag covers the hex text exactly as received, so it is checked before parsing it.
    expected = _tag(key, pads, nonce, cipher_hex)
    if not hmac.compare_digest(expected.encode(), tag_hex.encode()):
        raise SealError("tag_mismatch")
    try:
        cipher = bytes.fromhex(cipher_hex)
    except ValueError:
        raise SealError("tag_mismatch") from None
    return _xor(cipher, _keystream(pads, nonce, len(cipher)))


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


def sealed_code_key(license_secret: bytes, sealed_for: str = "") -> str:
    """The key a license's sealed functions are encrypted under (docs/protection.md,
    "Sealed functions"), handed to the game only inside `/unlock`'s sealed payload (its
    `sealed` member), never written in a copy. `sealed_for` is the version id and key
    generation the copy was made for (`sealing_context`): the key moves with a new version,
    a re-key and a transfer (a new license), so a key a buyer recorded once opens only the
    programs of that copy. Empty: the license's first-form key, which copies made before
    keys moved were sealed under."""
    if not sealed_for:
        return hmac.new(license_secret, b"licore/sealed-code-key/v1", hashlib.sha256).hexdigest()
    return hmac.new(license_secret, b"licore/sealed-code-key/v2|" + sealed_for.encode(),
                    hashlib.sha256).hexdigest()


def sealing_context(version_id: str, key_generation: int) -> str:
    """What a copy's sealed programs are keyed to, as its loader writes it in the clear and
    the SDK sends it with `/unlock` (`sealed_for`): not a secret, only a name for the key."""
    return f"{version_id}.{key_generation}"


def sealing_generation(sealed_for: str) -> int:
    """The key generation a `sealed_for` (already shaped by bounds.SEALED_FOR) names."""
    return int(sealed_for.rsplit(".", 1)[1])
