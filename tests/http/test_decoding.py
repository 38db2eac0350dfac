"""The one decoder: JSON bodies and query strings into commands, each refusal naming the
field; strict for the Partner API, lenient (unknown fields and nulls ignored) for runtime."""

from __future__ import annotations

from typing import Any

import pytest

from adapters_http.decoding import LENIENT, from_query, parse_json, structure
from licore import commands as c
from licore.commands import JsonValue
from licore.errors import InvalidRequest


def refusal(call: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(("body", "field", "words"), [
    ({}, "title", "required"),
    ({"title": 5}, "title", "string"),
    ({"title": None}, "title", "string"),
    ({"title": "ok", "price_credit": True}, "price_credit", "JSON integer"),
    ({"title": "ok", "price_credit": 5.0}, "price_credit", "JSON integer"),
    ({"title": "ok", "price_credit": "5"}, "price_credit", "JSON integer"),
    ({"title": "ok", "price_credit": -1}, "price_credit", "0 to 1,000,000"),
    ({"title": "ok", "discoverable": 1}, "discoverable", "true or false"),
    ({"title": "ok", "colour": "red"}, "colour", "unknown"),
])
def test_strict_bodies_are_refused_naming_the_field(body: dict[str, Any], field: str,
                                                    words: str) -> None:
    refused = refusal(lambda: structure(body, c.CreateProduct))
    assert refused.field == field and words in refused.description


def test_a_body_must_be_an_object_of_json() -> None:
    for raw in (b"not json", b"\xff\xfe", b"{oops"):
        assert "JSON" in refusal(lambda raw=raw: parse_json(raw)).description
    for body in ([1, 2], "text", 3, None):
        assert "object" in refusal(lambda body=body: structure(body, c.CreateProduct)).description


def test_a_sellers_json_keeps_null_apart_from_not_sent() -> None:
    sent = structure({"product_id": "p", "unlock_data": None}, c.ChangeSettings)
    assert sent.unlock_data == JsonValue(None) and sent.protection is None


def test_runtime_bodies_ignore_unknown_fields_and_read_null_as_not_sent() -> None:
    body = {"user_id": 42, "product_id": "p", "key": "lk_SECRET", "game_id": None, "x": [1]}
    check = structure(body, c.Check, LENIENT)
    assert (check.user_id, check.game_id) == ("42", None)
    assert "SECRET" not in repr(check)  # a key never reaches a log through a command's repr
    assert refusal(lambda: structure({**body, "user_id": True}, c.Check, LENIENT)).field == (
        "user_id")
    assert refusal(lambda: structure({**body, "user_id": "-1"}, c.Check, LENIENT)).field == (
        "user_id")


def test_queries_fill_the_page_and_refuse_what_is_not_a_whole_number() -> None:
    listed = from_query({"product_id": "p", "limit": "5", "cursor": "x", "other": "y"},
                        c.ListLicenses)
    assert listed == c.ListLicenses("p", c.Paging(5, "x"))
    for query, field in [({"limit": "ten"}, "limit"), ({"limit": "0"}, "limit"),
                         ({"limit": "1001"}, "limit"), ({"cursor": ""}, "cursor")]:
        assert refusal(lambda q=query: from_query(q, c.ListProducts)).field == field
    assert refusal(lambda: from_query({}, c.ListLicenses)).field == "product_id"
