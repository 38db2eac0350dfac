"""The sealing round trip, tampering, and the published test vectors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from licore import sealing
from licore.sealing import SealError, open_sealed, seal, verify_payload
from tests.support import spec_verifier

DOC = Path(__file__).resolve().parents[2] / "docs" / "sealing.md"
keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
               min_size=10, max_size=60).map(lambda s: "lk_" + s)
nonces = st.from_regex(r"[A-Za-z0-9]{16,128}", fullmatch=True)
LENGTHS = [0, 1, 31, 32, 33, 63, 64, 65, 200]


@settings(max_examples=200, deadline=None)
@given(key=keys, nonce=nonces, data=st.data())
def test_open_of_seal_is_identity(key: str, nonce: str, data: st.DataObject) -> None:
    size = data.draw(st.sampled_from(LENGTHS) | st.integers(0, 300))
    plaintext = data.draw(st.binary(min_size=size, max_size=size))
    sealed = seal(key, nonce, plaintext)
    assert len(sealed.cipher) == 2 * len(plaintext) and len(sealed.tag) == 64
    assert open_sealed(key, nonce, sealed.cipher, sealed.tag) == plaintext


@settings(max_examples=200, deadline=None)
@given(key=keys, nonce=nonces, plaintext=st.binary(min_size=1, max_size=100), data=st.data())
def test_any_changed_byte_of_cipher_or_tag_is_refused(key: str, nonce: str,
                                                      plaintext: bytes,
                                                      data: st.DataObject) -> None:
    sealed = seal(key, nonce, plaintext)
    field = data.draw(st.sampled_from(["cipher", "tag"]))
    raw = bytearray.fromhex(getattr(sealed, field))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] ^= data.draw(st.integers(1, 255))
    cipher, tag = sealed.cipher, sealed.tag
    if field == "cipher":
        cipher = raw.hex()
    else:
        tag = raw.hex()
    with pytest.raises(SealError) as refused:
        open_sealed(key, nonce, cipher, tag)
    assert refused.value.reason == sealing.TAG_MISMATCH


@settings(max_examples=100, deadline=None)
@given(key=keys, other_key=keys, nonce=nonces, other_nonce=nonces,
       plaintext=st.binary(max_size=80))
def test_another_nonce_or_license_key_is_refused(key: str, other_key: str, nonce: str,
                                                 other_nonce: str, plaintext: bytes) -> None:
    sealed = seal(key, nonce, plaintext)
    if other_nonce != nonce:
        with pytest.raises(SealError):
            open_sealed(key, other_nonce, sealed.cipher, sealed.tag)
    if other_key != key:
        with pytest.raises(SealError):
            open_sealed(other_key, nonce, sealed.cipher, sealed.tag)


def _unlock(key: str, nonce: str, echo: str, exp: int) -> sealing.Sealed:
    payload = json.dumps({"nonce": echo, "data": {"x": 1}, "exp": exp}).encode()
    return seal(key, nonce, payload)


def test_the_four_checks_in_order() -> None:
    key, nonce = "lk_" + "k" * 40, "N" * 32
    good = _unlock(key, nonce, nonce, exp=1000)
    assert verify_payload(key, nonce, good.cipher, good.tag, now=1000, exp=1000)["data"] == {
        "x": 1}
    with pytest.raises(SealError, match=sealing.EXPIRED):
        verify_payload(key, nonce, good.cipher, good.tag, now=1001, exp=1000)
    replayed = _unlock(key, nonce, "another" * 4, exp=1000)
    with pytest.raises(SealError, match=sealing.NONCE_MISMATCH):
        verify_payload(key, nonce, replayed.cipher, replayed.tag, now=0, exp=1000)
    garbage = seal(key, nonce, b"\xff not json")
    with pytest.raises(SealError, match=sealing.NOT_JSON):
        verify_payload(key, nonce, garbage.cipher, garbage.tag, now=0, exp=None)
    # The tag is checked before anything else: an expired, tampered answer is a tag failure.
    with pytest.raises(SealError, match=sealing.TAG_MISMATCH):
        verify_payload(key, nonce, good.cipher, "0" * 64, now=5000, exp=1000)


def _vectors() -> list[dict[str, str]]:
    blocks = re.findall(r"```vector\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    out = []
    for block in blocks:
        fields = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name.strip()] = value[1:] if value.startswith(" ") else value
        out.append(fields)
    return out


def test_the_document_publishes_at_least_four_vectors_incl_multi_block_and_empty() -> None:
    vectors = _vectors()
    assert len(vectors) >= 4
    sizes = [len(v["plaintext"].encode()) for v in vectors]
    assert 0 in sizes and any(s > 64 for s in sizes)


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: v["name"])
def test_published_vectors_match_the_code_and_the_specification(vector: dict[str, str]) -> None:
    plaintext = vector["plaintext"].encode()
    sealed = seal(vector["key"], vector["nonce"], plaintext)
    assert (sealed.cipher, sealed.tag) == (vector["cipher"], vector["tag"])
    assert spec_verifier.decrypt(vector["key"], vector["nonce"], vector["cipher"],
                                 vector["tag"]) == plaintext
    assert open_sealed(vector["key"], vector["nonce"], vector["cipher"],
                       vector["tag"]) == plaintext
