"""The OpenAPI document tells of Idempotency-Key (docs/api.md, "Retrying safely") on every
Partner POST and nowhere else: the header with the limits the core checks, the 422 a reused
key gets in the one error shape, and `Idempotent-Replayed` on the success answer."""

from __future__ import annotations

import jsonschema
import pytest

from adapters_http import partner
from adapters_http.openapi import openapi_document
from licore.errors import InvalidRequest
from licore.model import KeptAnswer
from licore.services import idempotency

DOC = openapi_document("http://127.0.0.1")


def _operations() -> list[tuple[str, str]]:
    return [(partner.MOUNT + e.path, e.method.lower()) for e in partner.ENDPOINTS]


@pytest.mark.parametrize(("path", "method"), _operations())
def test_every_partner_post_and_only_a_post_documents_the_key(path: str,
                                                              method: str) -> None:
    operation = DOC["paths"][path][method]
    headers = [p for p in operation.get("parameters", []) if p["in"] == "header"]
    ok_headers = operation["responses"]["200"]["headers"]
    if method == "post":
        assert [h["name"] for h in headers] == ["Idempotency-Key"]
        assert headers[0]["required"] is False
        assert operation["responses"]["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"}
        assert "idempotency_key_reused" in operation["responses"]["422"]["description"]
        assert ok_headers["Idempotent-Replayed"] == {
            "$ref": "#/components/headers/Idempotent-Replayed"}
    else:
        assert headers == []
        assert "422" not in operation["responses"]
        assert "Idempotent-Replayed" not in ok_headers


def test_the_documented_key_and_the_core_draw_the_same_line() -> None:
    schema = next(p["schema"] for p in DOC["paths"]["/v1/licenses"]["post"]["parameters"]
                  if p["name"] == "Idempotency-Key")
    once = idempotency.Once("", lambda: "", lambda _: KeptAnswer(200, "", b""))
    for sent in ["", "a", "k" * 255, "k" * 256, "a b", "caf\u00e9", "tab\there", "~!{}\"'",
                 "3f6c0a8e-5a1d-4b7e-9d0b-2c1e8f4a7b6d"]:
        documented = jsonschema.Draft202012Validator(schema).is_valid(sent)
        try:
            idempotency.Once(sent, once.fingerprint, once.answer).checked_key()
            accepted = True
        except InvalidRequest as refusal:
            assert "Idempotency-Key" in refusal.description
            accepted = False
        assert documented == accepted, sent
