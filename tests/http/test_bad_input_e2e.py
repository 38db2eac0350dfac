"""Bad input on every endpoint that takes a body: a missing field, a wrong type, an
out-of-range value, a body that is not JSON and (on the Partner API) an unknown field each
get `400 invalid_request` naming the field, and nothing is written. The device flow ignores
unknown fields instead (RFC 6749 section 3.2; tests/http/test_hostile_e2e.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.http.e2e import People, auth, owner_key, setup_people
from tests.support.dbdump import tables_and_rows
from tests.support.server import Server

ALL = "packages:read packages:write products:read products:write licenses:read licenses:write"
NOT_JSON = object()
# Rate counters move on every request, and a key's last_used_at at most once a minute, by
# design; everything else must stay exactly as it was.
VOLATILE = ("rate_counters", "api_keys")


@pytest.fixture(scope="module")
def ctx(server: Server) -> dict[str, str]:
    people: People = setup_people(server.database_url, "2")
    key = owner_key(server, people, ALL)
    product = httpx.post(f"{server.url}/v1/products", headers=auth(key),
                         json={"title": "Target"}).json()["id"]
    return {"key": key, "product": product, "client": people.client_id}


def cases(valid: dict[str, Any], missing: str, wrong: tuple[str, Any],
          out_of_range: tuple[str, Any], unknown_refused: bool
          ) -> list[tuple[dict[str, Any] | object, str]]:
    found = [
        ({k: v for k, v in valid.items() if k != missing}, missing),
        ({**valid, wrong[0]: wrong[1]}, wrong[0]),
        ({**valid, out_of_range[0]: out_of_range[1]}, out_of_range[0]),
        (NOT_JSON, "JSON"),
    ]
    if unknown_refused:
        found.append(({**valid, "surprise": 1}, "surprise"))
    return found


ENDPOINTS: list[tuple[str, bool, dict[str, Any], str, tuple[str, Any], tuple[str, Any]]] = [
    ("/v1/products", True, {"title": "New"}, "title", ("title", 7), ("price_credit", -5)),
    ("/v1/licenses", True, {"product_id": "PRODUCT", "user": "55"}, "user",
     ("product_id", 5), ("user", "u" * 65)),
    ("/v1/licenses/pause", True, {"product_id": "PRODUCT", "user": "55"}, "product_id",
     ("user", ["55"]), ("user", "u" * 65)),
    ("/v1/licenses/resume", True, {"product_id": "PRODUCT", "user": "55"}, "user",
     ("user", 55), ("product_id", "p" * 201)),
    ("/v1/packages/settings", True, {"product_id": "PRODUCT", "verify_scripts": True},
     "product_id", ("verify_scripts", "yes"), ("placeholder", "ab")),
    ("/v1/packages/settings", True, {"product_id": "PRODUCT", "protection": {"rules": []}},
     "product_id", ("protection", {"rules": {}}), ("protection", {"rules": [{"preset": "x"}]})),
    # release channels (docs/api.md)
    ("/v1/packages/publish", True, {"product_id": "PRODUCT", "version_id": "v",
                                    "channel": "beta"}, "version_id",
     ("channel", 1), ("channel", "nightly")),
    ("/v1/packages/withdraw", True, {"product_id": "PRODUCT", "version_id": "v"},
     "version_id", ("version_id", 5), ("product_id", "p" * 201)),
    ("/auth/device/code", False, {"client_id": "CLIENT", "scope": "library:read"}, "scope",
     ("scope", ["library:read"]), ("client_id", "c" * 2001)),
    ("/auth/device/token", False, {"device_code": "abc"}, "device_code",
     ("device_code", 12), ("device_code", "d" * 2001)),
]


@pytest.mark.parametrize(("path", "keyed", "valid", "missing", "wrong", "out_of_range"),
                         ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_bad_bodies_are_refused_naming_the_field_and_write_nothing(
        server: Server, ctx: dict[str, str], path: str, keyed: bool, valid: dict[str, Any],
        missing: str, wrong: tuple[str, Any], out_of_range: tuple[str, Any]) -> None:
    names = {"PRODUCT": ctx["product"], "CLIENT": ctx["client"]}
    valid = {k: names.get(v, v) if isinstance(v, str) else v for k, v in valid.items()}
    headers = auth(ctx["key"]) if keyed else {}
    before = tables_and_rows(server.database_url, VOLATILE)
    for body, field in cases(valid, missing, wrong, out_of_range,
                             unknown_refused=path.startswith("/v1/")):
        if body is NOT_JSON:
            r = httpx.post(server.url + path, content=b"{oops",
                           headers={**headers, "content-type": "application/json"})
        else:
            r = httpx.post(server.url + path, json=body, headers=headers)
        assert (r.status_code, r.json()["error"]) == (400, "invalid_request"), (body, r.text)
        assert field in r.json()["error_description"], (body, r.text)
    assert tables_and_rows(server.database_url, VOLATILE) == before
