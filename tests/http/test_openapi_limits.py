"""The OpenAPI document and the commands agree on every limit: each value at and just past
a bound is accepted or refused by the document's schema exactly when the command accepts or
refuses it, and the bounds are the specification's numbers."""

from __future__ import annotations

from typing import Any

import attrs
import jsonschema
import pytest

from adapters_http.openapi import openapi_document
from licore import bounds, commands
from licore import license_commands as lc
from licore.errors import InvalidRequest

DOC = openapi_document("http://127.0.0.1")

# Where the document describes a field, and the command field it is read into.
FIELDS: list[tuple[str, str, str, str, type, str]] = [
    ("/v1/products", "post", "body", "title", commands.CreateProduct, "title"),
    ("/v1/products", "post", "body", "tagline", commands.CreateProduct, "tagline"),
    ("/v1/products", "post", "body", "description", commands.ChangeProduct, "description"),
    ("/v1/products", "post", "body", "price_credit", commands.ChangeProduct, "price_credit"),
    ("/v1/products", "get", "query", "limit", commands.Paging, "limit"),
    ("/v1/licenses", "get", "query", "cursor", commands.Paging, "cursor"),
    ("/runtime/unlock", "post", "body", "nonce", commands.Unlock, "nonce"),
    ("/runtime/update", "post", "body", "nonce", commands.Update, "nonce"),
    ("/v1/packages/settings", "post", "body", "placeholder", commands.ChangeSettings,
     "placeholder"),
    ("/v1/packages/versions", "post", "query", "version", commands.UploadVersion, "version"),
    ("/v1/licenses", "post", "body", "purchase_id", lc.GrantLicense, "purchase_id"),
]


def deref(node: dict[str, Any]) -> dict[str, Any]:
    """The node a local `$ref` (`#/components/...`) points at, or the node itself."""
    while "$ref" in node:
        found: Any = DOC
        for part in node["$ref"].removeprefix("#/").split("/"):
            found = found[part]
        node = found
    return node


def documented(path: str, method: str, where: str, name: str) -> dict[str, Any]:
    operation = DOC["paths"][path][method]
    if where == "query":
        params = [deref(p) for p in operation["parameters"]]
        return deref(next(p["schema"] for p in params if p["name"] == name))
    body = deref(deref(operation["requestBody"])["content"]["application/json"]["schema"])
    return deref(body["properties"][name])


def edges(rule: bounds.Text | bounds.WholeNumber) -> list[Any]:
    if isinstance(rule, bounds.WholeNumber):
        return [rule.low - 1, rule.low, rule.high, rule.high + 1]
    sizes = {max(0, rule.min_len - 1), rule.min_len, rule.max_len, rule.max_len + 1}
    return ["a" * n for n in sorted(sizes)] + ["a" * max(rule.min_len - 1, 0) + "!"]


def command_accepts(command: type, field: str, value: Any) -> bool:
    attribute = attrs.fields_dict(command)[field]
    assert attribute.validator is not None
    try:
        attribute.validator(None, attribute, value)
    except InvalidRequest as refusal:
        assert refusal.field == field
        return False
    return True


@pytest.mark.parametrize(("path", "method", "where", "name", "command", "field"), FIELDS,
                         ids=[f"{f[0]} {f[3]}" for f in FIELDS])
def test_the_document_and_the_command_draw_the_same_line(
        path: str, method: str, where: str, name: str, command: type, field: str) -> None:
    schema = documented(path, method, where, name)
    rule = attrs.fields_dict(command)[field].validator
    assert isinstance(rule, (bounds.Text, bounds.WholeNumber))
    for value in edges(rule):
        in_document = jsonschema.Draft202012Validator(schema).is_valid(value)
        assert in_document == command_accepts(command, field, value), (name, value)


def test_the_bounds_are_the_specifications_numbers() -> None:
    assert (bounds.TITLE.max_len, bounds.TAGLINE.max_len, bounds.DESCRIPTION.max_len) == (
        80, 140, 5000)
    assert (bounds.PRICE_CREDIT.low, bounds.PRICE_CREDIT.high) == (0, 1_000_000)
    assert (bounds.NONCE.min_len, bounds.NONCE.max_len) == (16, 128)
    assert all(command_accepts(commands.Unlock, "nonce", n) is ok for n, ok in [
        ("a" * 15, False), ("Ab3" * 6, True), ("a" * 128, True), ("a" * 129, False),
        ("a" * 15 + "_", False), ("é" * 16, False)])
