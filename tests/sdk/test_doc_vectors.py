"""The Luau SDK opens every test vector published in docs/sealing.md."""

from __future__ import annotations

import pytest

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
