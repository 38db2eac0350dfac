"""The hook every end-to-end test runs under (tests/support/answers.py, tests/http/conftest.py):
an answer that differs from the server's OpenAPI document is named, one that matches and one
the document does not describe are not."""

from __future__ import annotations

import httpx

from tests.support.answers import problem
from tests.support.server import Server


def answer(server: Server, path: str, status: int, body: object) -> tuple[httpx.Request,
                                                                          httpx.Response]:
    request = httpx.Request("POST", f"{server.url}{path}")
    return request, httpx.Response(status, json=body, request=request)


def test_an_answer_with_a_field_the_document_lacks_is_named(server: Server) -> None:
    request, response = answer(server, "/v1/products", 200,
                               {"ok": True, "id": "prd_1", "slug": "s", "discoverable": False,
                                "surprise": 1})
    found = problem(request, response)
    assert found is not None and found.startswith("POST /v1/products 200: ")
    assert "'surprise' was unexpected" in found


def test_a_documented_error_in_its_shape_passes_and_another_shape_is_named(
        server: Server) -> None:
    error = {"error": "invalid_request", "error_description": "title is required"}
    assert problem(*answer(server, "/v1/products", 400, error)) is None
    assert problem(*answer(server, "/v1/products", 400, {"message": "no"})) is not None


def test_what_the_document_does_not_describe_is_not_judged(server: Server) -> None:
    assert problem(*answer(server, "/no/such/path", 200, {"any": 1})) is None
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/products")  # no server of ours
    assert problem(request, httpx.Response(200, json={"x": 1}, request=request)) is None
