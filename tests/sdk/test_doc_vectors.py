"""The Luau SDK opens every test vector published in docs/sealing.md."""

from __future__ import annotations

import pytest

from licore.sealing import seal
from tests.sdk.luau_sdk import LuauSdk, as_bytes
from tests.test_sealing_vectors import VECTORS


@pytest.fixture(scope="module")
def sdk() -> LuauSdk:
    return LuauSdk()


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v["nonce"] + str(len(v["plaintext"])))
def test_luau_opens_doc_vector(sdk: LuauSdk, v: dict[str, str]) -> None:
    plain, reason = sdk.call("openSealed", v["license_key"], v["nonce"], v["cipher"], v["tag"])
    assert reason is None
    assert as_bytes(plain).decode("utf-8") == v["plaintext"]


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v["nonce"] + str(len(v["plaintext"])))
def test_luau_refuses_doc_vector_under_upper_case_tag(sdk: LuauSdk, v: dict[str, str]) -> None:
    # The tag is lower-case hex on the wire; the Python core refuses other spellings too.
    got = sdk.call("openSealed", v["license_key"], v["nonce"], v["cipher"], v["tag"].upper())
    assert got == [None, "tag_mismatch"]


@pytest.mark.parametrize("nonce_len", [16, 32, 50, 51, 54, 55, 63, 64, 100, 127, 128])
def test_luau_opens_answers_for_every_nonce_length(sdk: LuauSdk, nonce_len: int) -> None:
    # Lengths around 64: the keystream's `nonce|counter` blocks then span one or two SHA-256
    # blocks, and whole 64-byte prefix blocks are absorbed once.
    nonce = ("N0nce" * 30)[:nonce_len]
    plain = bytes(range(256)) * 3 + b"tail"  # not a multiple of the 32-byte keystream block
    sealed = seal("LIC-LEN", nonce, plain)
    got, reason = sdk.call("openSealed", "LIC-LEN", nonce, sealed.cipher, sealed.tag)
    assert reason is None
    assert as_bytes(got) == plain
