"""Issue 26, item 6: every `error_description` is printable ASCII without `"` or `\\`
(RFC 6749 section 5.2), whatever client text it quotes, in the body and in the
`WWW-Authenticate` header alike."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_http.decoding import check_text, from_query, parse_json, structure
from adapters_http.edge import refusal_for
from adapters_http.responses import error_response
from licore import commands as c
from licore.errors import MAX_DESCRIPTION, InvalidRequest, InvalidToken, LicoreError

# %x20-21 / %x23-5B / %x5D-7E
CONFORMING = re.compile(r'[ !#-\[\]-~]*')


def conforms(description: str) -> bool:
    return CONFORMING.fullmatch(description) is not None and len(description) <= (
        MAX_DESCRIPTION)


def refusal(call: object) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        call()  # type: ignore[operator]
    return caught.value


def test_a_duplicate_key_is_quoted_without_quote_or_backslash() -> None:
    refused = refusal(lambda: parse_json(b'{"a\\"b\\\\": 1, "a\\"b\\\\": 2}'))
    assert refused.description == "duplicate key: aU+0022bU+005C"
    assert '"' not in refused.description and "\\" not in refused.description


def test_the_answer_to_a_duplicate_key_carries_the_safe_description() -> None:
    refused = refusal(lambda: parse_json(b'{"a\\"b\\\\": 1, "a\\"b\\\\": 2}'))
    body = json.loads(bytes(error_response(refused).body))
    assert body == {"error": "invalid_request",
                    "error_description": "duplicate key: aU+0022bU+005C"}


@given(st.text(max_size=80))
def test_any_duplicate_key_gives_a_conforming_description(key: str) -> None:
    raw = json.dumps(key)
    refused = refusal(lambda: parse_json(f"{{{raw}: 1, {raw}: 2}}"))
    assert conforms(refused.description), refused.description


@given(st.text(max_size=80), st.text(max_size=80))
def test_any_unknown_field_or_bad_query_gives_a_conforming_description(
        name: str, value: str) -> None:
    if name not in ("id", "title", "tagline", "description", "price_credit", "discoverable"):
        refused = refusal(lambda: structure({name: 1}, c.CreateProduct))
        assert conforms(refused.description), refused.description
    try:
        check_text(name, value)
    except InvalidRequest as refused:
        assert conforms(refused.description), refused.description
    try:
        from_query({"product_id": value, "limit": name}, c.ListLicenses)
    except InvalidRequest as refused:
        assert conforms(refused.description), refused.description


@given(st.text(max_size=2000))
def test_any_description_is_made_conforming_in_body_and_header(text: str) -> None:
    for error in (LicoreError(text), InvalidRequest(text, "f"), InvalidToken(text)):
        assert conforms(error.description), error.description
        answer = error_response(error)
        assert conforms(json.loads(bytes(answer.body))["error_description"])
    header = error_response(InvalidToken(text)).headers["www-authenticate"]
    quoted = re.fullmatch(r'Bearer error="invalid_token", error_description="(.*)"', header)
    assert quoted is not None and conforms(quoted.group(1)), header
    _, _, body = refusal_for("/v1/products", text)
    assert conforms(json.loads(body)["error_description"])


def test_text_that_already_conforms_is_kept_as_it_is() -> None:
    plain = "title must be 1 to 120 characters; got 'x' (see docs/api.md #bounds)"
    assert LicoreError(plain).description == plain
    assert refusal(lambda: parse_json(b'{"title": 1, "title": 2}')).description == (
        "duplicate key: title")
