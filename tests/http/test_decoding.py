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


def test_a_field_that_must_be_sent_takes_null_as_its_value() -> None:
    from licore import license_commands as lc

    target = {"product_id": "p", "user": "42"}
    cleared = structure({**target, "tier": None}, lc.TierForm).command()
    assert cleared.tier is None
    assert structure({**target, "tier": "pro"}, lc.TierForm).command().tier == "pro"
    missing = refusal(lambda: structure(target, lc.TierForm))
    assert (missing.field, "required" in missing.description) == ("tier", True)
    # An optional field still refuses null: leave it out to mean "not sent".
    assert refusal(lambda: structure({**target, "tier": None}, lc.GrantForm)).field == "tier"


def test_runtime_bodies_ignore_unknown_fields_and_read_null_as_not_sent() -> None:
    body = {"user_id": 42, "product_id": "p", "key": "lk_SECRET", "game_id": None, "x": [1]}
    check = structure(body, c.Check, LENIENT)
    assert (check.user_id, check.game_id) == ("42", None)
    assert "SECRET" not in repr(check)  # a key never reaches a log through a command's repr
    assert refusal(lambda: structure({**body, "user_id": True}, c.Check, LENIENT)).field == (
        "user_id")
    assert refusal(lambda: structure({**body, "user_id": "-1"}, c.Check, LENIENT)).field == (
        "user_id")


def test_an_update_that_names_no_node_form_gets_the_tagged_form() -> None:
    """docs/runtime.md and docs/instances.md: tagged is the default, so clients written
    before the compact form existed keep working."""
    body = {"user_id": 42, "product_id": "p", "key": "k", "nonce": "n" * 16}
    assert structure(body, c.Update, LENIENT).nodes == "tagged"
    assert structure({**body, "nodes": None}, c.Update, LENIENT).nodes == "tagged"
    assert structure({**body, "nodes": "compact"}, c.Update, LENIENT).nodes == "compact"


def test_queries_fill_the_page_and_refuse_what_is_not_a_whole_number() -> None:
    listed = from_query({"product_id": "p", "limit": "5", "cursor": "x", "other": "y"},
                        c.ListLicenses)
    assert listed == c.ListLicenses("p", c.Paging(5, "x"))
    for query, field in [({"limit": "ten"}, "limit"), ({"limit": "0"}, "limit"),
                         ({"limit": "1001"}, "limit"), ({"cursor": ""}, "cursor")]:
        assert refusal(lambda q=query: from_query(q, c.ListProducts)).field == field
    assert refusal(lambda: from_query({}, c.ListLicenses)).field == "product_id"


@pytest.mark.parametrize(("text", "words"), [
    (b'{"a": "\\ud800"}', "lone surrogate"),
    (b'{"\\udc00": 1}', "lone surrogate"),
    (b'["\\u0000"]', "zero byte"),
    (b'{"a\\u0000": 1}', "zero byte"),
    (b"[" * 3000 + b"]" * 3000, "nested"),
    (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested"),
    (b"[" * 65 + b"]" * 65, "nested"),
    (b"1" + b"0" * 5000, "too long"),
    (b"9223372036854775808", "64-bit"),
    (b"1e999", "out of range"),
    (b"NaN", "not a JSON number"),
    (b"-Infinity", "not a JSON number"),
    (b'{"title": 1, "title": 2}', "duplicate key: title"),
    (b'["' + b"a" * 70_000 + b'"]', "longer than"),
    (b'"caf\xe9"', "UTF-8"),
    (b"[" * 10 + b'"unterminated', "JSON"),
])
def test_parse_json_refuses_hostile_text_and_raises_nothing_else(text: bytes,
                                                                 words: str) -> None:
    assert words in refusal(lambda: parse_json(text)).description


def test_parse_json_takes_what_is_fine() -> None:
    nested: object = 1
    for _ in range(64):
        nested = [nested]
    assert parse_json(b"[" * 64 + b"1" + b"]" * 64) == nested
    assert parse_json(b'{"a": "[[[[{{{{\\"]]"}') == {"a": '[[[[{{{{"]]'}  # not nesting
    assert parse_json(b"-9223372036854775808") == -(1 << 63)
    assert parse_json(b'"\\ud83d\\ude00"') == "\U0001f600"  # a surrogate pair is fine
    assert parse_json(b'["' + b"a" * 70_000 + b'"]', max_string=80_000) == ["a" * 70_000]


def test_device_flow_policy_ignores_unknown_fields_but_checks_known_ones() -> None:
    from adapters_http.decoding import OAUTH

    asked = structure({"scope": "library:read", "resource": "x", "audience": [1]},
                      c.StartAuthorization, OAUTH)
    assert asked.scope == "library:read"
    assert refusal(lambda: structure({"scope": 5, "resource": "x"}, c.StartAuthorization,
                                     OAUTH)).field == "scope"


def test_zero_bytes_in_a_query_are_refused() -> None:
    assert refusal(lambda: from_query({"product_id": "a\x00"}, c.ListLicenses)).field == (
        "product_id")
