"""Property tests for the sealing scheme (spec section 5)."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from licore import sealing
from licore.sealing import SealError, open_sealed, seal, verify_payload
from tests.support import spec_verifier

nonces = st.text(alphabet="abcdefABCDEF0123456789xyzXYZ", min_size=16, max_size=64)
keys = st.text(min_size=1, max_size=40)
edge_lengths = st.sampled_from([0, 1, 31, 32, 33, 63, 64, 65, 200])
payloads = st.one_of(
    st.binary(max_size=300),
    edge_lengths.flatmap(lambda n: st.binary(min_size=n, max_size=n)),
)
FAST = settings(max_examples=150, deadline=None)


@pytest.mark.parametrize("length", [0, 1, 31, 32, 33, 64, 65, 32 * 7 + 5])
def test_round_trip_at_block_edges(length: int) -> None:
    data = bytes((i * 7 + 3) % 256 for i in range(length))
    sealed = seal("KEY-1", "n" * 16, data)
    assert len(sealed.cipher) == 2 * length
    assert sealed.cipher == sealed.cipher.lower()
    assert open_sealed("KEY-1", "n" * 16, sealed.cipher, sealed.tag) == data


@FAST
@given(keys, nonces, payloads)
def test_open_of_seal_is_identity(key: str, nonce: str, data: bytes) -> None:
    sealed = seal(key, nonce, data)
    assert open_sealed(key, nonce, sealed.cipher, sealed.tag) == data
    assert spec_verifier.open_envelope(key, nonce, sealed.cipher, sealed.tag) == data


@FAST
@given(keys, nonces, st.binary(min_size=1, max_size=100), st.data())
def test_any_changed_cipher_byte_is_refused(
    key: str, nonce: str, data: bytes, draw: st.DataObject
) -> None:
    sealed = seal(key, nonce, data)
    raw = bytearray(bytes.fromhex(sealed.cipher))
    pos = draw.draw(st.integers(0, len(raw) - 1))
    raw[pos] ^= draw.draw(st.integers(1, 255))
    with pytest.raises(SealError) as err:
        open_sealed(key, nonce, raw.hex(), sealed.tag)
    assert err.value.reason == "tag_mismatch"


@FAST
@given(keys, nonces, payloads, st.data())
def test_any_changed_tag_byte_is_refused(
    key: str, nonce: str, data: bytes, draw: st.DataObject
) -> None:
    sealed = seal(key, nonce, data)
    raw = bytearray(bytes.fromhex(sealed.tag))
    pos = draw.draw(st.integers(0, len(raw) - 1))
    raw[pos] ^= draw.draw(st.integers(1, 255))
    with pytest.raises(SealError) as err:
        open_sealed(key, nonce, sealed.cipher, raw.hex())
    assert err.value.reason == "tag_mismatch"


def _unlock_body(key: str, nonce: str, exp: int) -> dict[str, object]:
    plain = json.dumps({"nonce": nonce, "data": {"tier": "gold"}}).encode()
    sealed = seal(key, nonce, plain)
    return {"ok": True, "exp": exp, "cipher": sealed.cipher, "tag": sealed.tag}


@FAST
@given(keys, nonces, st.integers(0, 2**40))
def test_genuine_unlock_verifies(key: str, nonce: str, now: int) -> None:
    body = _unlock_body(key, nonce, now + 300)
    got = verify_payload(key, nonce, str(body["cipher"]), str(body["tag"]), now, now + 300)
    assert got == {"nonce": nonce, "data": {"tier": "gold"}}
    assert spec_verifier.verify(key, nonce, body, now) == got


@FAST
@given(keys, nonces, nonces)
def test_different_nonce_is_refused(key: str, nonce: str, other: str) -> None:
    if other == nonce:
        other = nonce + "Z"
    body = _unlock_body(key, nonce, 100)
    with pytest.raises(SealError) as err:
        verify_payload(key, other, str(body["cipher"]), str(body["tag"]), 0, 100)
    assert err.value.reason == "tag_mismatch"


@FAST
@given(keys, keys, nonces)
def test_other_license_key_is_refused(key: str, other: str, nonce: str) -> None:
    if other == key:
        other = key + "x"
    body = _unlock_body(key, nonce, 100)
    with pytest.raises(SealError) as err:
        verify_payload(other, nonce, str(body["cipher"]), str(body["tag"]), 0, 100)
    assert err.value.reason == "tag_mismatch"


@FAST
@given(keys, nonces, st.integers(0, 2**40), st.integers(1, 10**6))
def test_passed_exp_is_refused(key: str, nonce: str, exp: int, late: int) -> None:
    body = _unlock_body(key, nonce, exp)
    assert verify_payload(key, nonce, str(body["cipher"]), str(body["tag"]), exp, exp)
    with pytest.raises(SealError) as err:
        verify_payload(key, nonce, str(body["cipher"]), str(body["tag"]), exp + late, exp)
    assert err.value.reason == "expired"
    with pytest.raises(spec_verifier.SpecCheckFailed):
        spec_verifier.verify(key, nonce, body, exp + late)


def test_update_without_exp_is_not_time_checked() -> None:
    plain = json.dumps({"nonce": "a" * 16, "version": "1.0", "instances": []}).encode()
    sealed = seal("k", "a" * 16, plain)
    got = verify_payload("k", "a" * 16, sealed.cipher, sealed.tag, 10**12, None)
    assert got["version"] == "1.0"


def test_sealed_non_json_is_refused_after_the_tag() -> None:
    sealed = seal("k", "a" * 16, b"\xff not json")
    with pytest.raises(SealError) as err:
        verify_payload("k", "a" * 16, sealed.cipher, sealed.tag, 0, None)
    assert err.value.reason == "not_json"


def test_sealed_wrong_nonce_echo_is_refused() -> None:
    # A server bug or replay that seals someone else's echo under our nonce.
    sealed = seal("k", "a" * 16, json.dumps({"nonce": "b" * 16}).encode())
    with pytest.raises(SealError) as err:
        verify_payload("k", "a" * 16, sealed.cipher, sealed.tag, 0, None)
    assert err.value.reason == "nonce_mismatch"


def test_tag_is_checked_before_decrypting_garbage() -> None:
    with pytest.raises(SealError) as err:
        open_sealed("k", "a" * 16, "zz-not-hex", "00" * 32)
    assert err.value.reason == "tag_mismatch"


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=80), st.text(alphabet="abcdef0123456789", min_size=16,
                                                 max_size=64),
       st.binary(max_size=3000) | st.binary(min_size=2048, max_size=9000))
def test_cpythons_sha256_and_openssls_seal_alike(key: str, nonce: str, plaintext: bytes
                                                 ) -> None:
    # Short messages are hashed by CPython's SHA-256 module where it has one; forcing
    # OpenSSL's everywhere must not change a byte (cipher texts over the long-message
    # threshold take the other branch of the tag).
    fast = seal(key, nonce, plaintext)
    assert sealing._SHORT is not hashlib.sha256  # the fast path is what runs here
    original = sealing._SHORT
    sealing._SHORT = hashlib.sha256
    try:
        assert seal(key, nonce, plaintext) == fast
        assert open_sealed(key, nonce, fast.cipher, fast.tag) == plaintext
    finally:
        sealing._SHORT = original
