"""The SDK's own JSON decoder (used outside Roblox, where HttpService is absent) reads what
Python's json writes: strings with and without escapes, in any order, of any length."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.sdk.luau_sdk import LuauSdk

_SDK: list[LuauSdk] = []


def _decode(text: str) -> Any:
    if not _SDK:
        _SDK.append(LuauSdk())
    sdk = _SDK[0]
    return sdk.to_python(sdk.call("jsonDecode", text.encode())[0])


@pytest.mark.parametrize("value", [
    # A string with no escape is taken in one piece up to its quote; one with an escape before
    # its quote goes through the escape loop; the backslash's place is kept between strings.
    ["plain", "a\\b", "plain again", 'q"uote', "", "\n", "end"],
    {"k\\ey": "v", "plain": "x" * 100_000, "last": "\u00e9\U0001f600"},
    ["\\" * 5, "/", "\"", "after"],
    {"nonce": "0123", "version": "1.0", "instances": [], "pad": "x" * 300_000},
])
def test_strings_with_and_without_escapes(value: Any) -> None:
    for ascii_only in (True, False):
        assert _decode(json.dumps(value, ensure_ascii=ascii_only)) == value


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from('ab"\\/\n\u00e9\U0001f600'), max_size=12),
                max_size=8))
def test_random_strings_decode_as_python_writes_them(value: list[str]) -> None:
    assert _decode(json.dumps(value)) == value
    assert _decode(json.dumps({"k": value, "n": 1})) == {"k": value, "n": 1}


@pytest.mark.parametrize(("text", "why"), [
    ('"abc', "unterminated string"), ('["a", "b', "unterminated string"),
    ('"a\\q"', "bad escape"), ('{"a": "b\\"}', "unterminated string"),
])
def test_an_unterminated_string_or_bad_escape_is_an_error(text: str, why: str) -> None:
    with pytest.raises(RuntimeError, match=why):
        _decode(text)
