"""RFC 4231 HMAC-SHA256 test cases 1-7 run through the Luau SDK in the real VM."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sdk.luau_sdk import LuauSdk, as_bytes

LONG_KEY = b"\xaa" * 131
RFC4231 = [
    # (case, key, data, expected hex, bytes kept)
    (
        1,
        b"\x0b" * 20,
        b"Hi There",
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        32,
    ),
    (
        2,
        b"Jefe",
        b"what do ya want for nothing?",
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        32,
    ),
    (3, b"\xaa" * 20, b"\xdd" * 50, None, 32),
    (4, bytes(range(1, 26)), b"\xcd" * 50, None, 32),
    # Case 5 specifies only the first 128 bits of the output.
    (5, b"\x0c" * 20, b"Test With Truncation", "a3b6167473100ee06e0c796c2955552b", 16),
    (6, LONG_KEY, b"Test Using Larger Than Block-Size Key - Hash Key First", None, 32),
    (
        7,
        LONG_KEY,
        b"This is a test using a larger than block-size key and a larger than block-size"
        b" data. The key needs to be hashed before being used by the HMAC algorithm.",
        None,
        32,
    ),
]


@pytest.fixture(scope="module")
def sdk() -> LuauSdk:
    return LuauSdk()


@pytest.mark.parametrize(("case", "key", "data", "published", "keep"), RFC4231)
def test_rfc4231_case(
    sdk: LuauSdk, case: int, key: bytes, data: bytes, published: str | None, keep: int
) -> None:
    raw = as_bytes(sdk.call("hmacSha256", key, data)[0])
    assert len(raw) == 32
    # Cases without a literal here are checked against Python's validated hmac module.
    expected = published or hmac.new(key, data, hashlib.sha256).hexdigest()
    assert raw[:keep].hex() == expected[: 2 * keep], f"RFC 4231 case {case}"


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=200))
def test_sha256_matches_hashlib_at_every_padding_boundary(data: bytes) -> None:
    sdk = _shared()
    assert as_bytes(sdk.call("sha256", data)[0]) == hashlib.sha256(data).digest()


@pytest.mark.parametrize("n", [0, 55, 56, 63, 64, 65, 119, 120, 128])
def test_sha256_padding_lengths(sdk: LuauSdk, n: int) -> None:
    data = bytes(i % 251 for i in range(n))
    assert as_bytes(sdk.call("sha256", data)[0]) == hashlib.sha256(data).digest()


_SDK: list[LuauSdk] = []


def _shared() -> LuauSdk:
    if not _SDK:
        _SDK.append(LuauSdk())
    return _SDK[0]
