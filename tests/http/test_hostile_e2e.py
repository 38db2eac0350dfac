"""Hostile input against a real server, on SQLite and PostgreSQL: every JSON endpoint gets a
lone surrogate, 3,000 levels of nesting, numbers too big for any field, the wrong types,
a key written twice, a huge string, a zero byte and the wrong content type. Each answer is
the documented refusal (Partner API and device flow `400 invalid_request`; `/check` HTTP 200
`{success: false}`; the other runtime calls `400 {ok: false}`), and the database is exactly
as it was.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http.e2e import People, auth, owner_key, setup_people
from tests.support.dbdump import tables_and_rows
from tests.support.server import Server, running_server

# Rate counters move on every request, and a key's last_used_at at most once a minute, by
# design; everything else must stay exactly as it was.
VOLATILE = ("rate_counters", "api_keys")
STUDIO = ("products:read products:write licenses:read licenses:write packages:read "
          "packages:write")
NONCE = "n" * 24


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_PARTNER_RATE_LIMIT="100000",
                        LICORE_RUNTIME_IP_RATE_LIMIT="100000") as s:
        yield s


@pytest.fixture(scope="module")
def ctx(server: Server) -> dict[str, str]:
    people: People = setup_people(server.database_url, "7")
    key = owner_key(server, people, STUDIO)
    product = httpx.post(f"{server.url}/v1/products", headers=auth(key),
                         json={"title": "Target"}).json()["id"]
    return {"key": key, "product": product, "client": people.client_id,
            "studio": people.studio_id}


# path, needs the key, a valid body (PRODUCT / CLIENT filled in), the field made hostile
ENDPOINTS: list[tuple[str, bool, dict[str, Any], str]] = [
    ("/v1/products", True, {"title": "New"}, "title"),
    ("/v1/licenses", True, {"product_id": "PRODUCT", "user": "55"}, "user"),
    ("/v1/licenses/pause", True, {"product_id": "PRODUCT", "user": "55"}, "user"),
    ("/v1/licenses/resume", True, {"product_id": "PRODUCT", "user": "55"}, "product_id"),
    ("/v1/packages/publish", True, {"product_id": "PRODUCT", "version_id": "v"}, "version_id"),
    ("/v1/packages/withdraw", True, {"product_id": "PRODUCT", "version_id": "v"},
     "version_id"),
    ("/v1/packages/settings", True, {"product_id": "PRODUCT", "placeholder": "x"},
     "placeholder"),
    ("/auth/device/code", False, {"client_id": "CLIENT", "scope": "library:read"}, "scope"),
    ("/auth/device/token", False, {"device_code": "abc"}, "device_code"),
    ("/auth/revoke", False, {"token": "abc"}, "token"),
    ("/runtime/check", False, {"user_id": "55", "product_id": "PRODUCT", "key": "k"}, "key"),
    ("/runtime/unlock", False, {"user_id": "55", "product_id": "PRODUCT", "key": "k",
                                "nonce": NONCE}, "nonce"),
    ("/runtime/version", False, {"user_id": "55", "product_id": "PRODUCT", "key": "k"},
     "product_id"),
    ("/runtime/update", False, {"user_id": "55", "product_id": "PRODUCT", "key": "k",
                                "nonce": NONCE}, "key"),
    ("/runtime/verify-source", False, {"user_id": "55", "product_id": "PRODUCT", "key": "k",
                                       "script_name": "Main", "source": "print(1)"},
     "script_name"),
]

MARK = "\u2603HOSTILE\u2603"  # stands where the hostile JSON text goes


def _with(valid: dict[str, Any], field: str, raw_value: str) -> bytes:
    """The valid body as JSON text with `field`'s value replaced by raw JSON text."""
    text = json.dumps({**valid, field: MARK})
    return text.replace(json.dumps(MARK), raw_value).encode()


def hostile_bodies(valid: dict[str, Any], field: str) -> dict[str, bytes]:
    deep = "[" * 3000 + "]" * 3000
    dumped = json.dumps(valid)
    return {
        "surrogate": _with(valid, field, '"a\\ud800b"'),
        "surrogate key": dumped.replace("{", '{"\\udfff": 1, ', 1).encode(),
        "deep": _with(valid, field, deep),
        "deep objects": _with(valid, field, '{"a":' * 3000 + "1" + "}" * 3000),
        "huge integer": _with(valid, field, "1" + "0" * 5000),
        "huge float": _with(valid, field, "1e999"),
        "nan": _with(valid, field, "NaN"),
        "wrong type": _with(valid, field, '{"nested": [1, 2, 3]}'),
        "boolean": _with(valid, field, "true"),
        "duplicate key": dumped.replace("{", f'{{"{field}": "first", ', 1).encode(),
        "huge string": _with(valid, field, json.dumps("a" * 300_000)),
        "zero byte": _with(valid, field, '"a\\u0000b"'),
        "zero byte key": dumped.replace("{", '{"a\\u0000": 1, ', 1).encode(),
        "not utf-8": _with(valid, field, '"caf\xe9"').decode().encode("latin-1"),
    }


def refused(path: str, r: httpx.Response) -> None:
    if path == "/runtime/check":
        assert (r.status_code, r.json()) == (200, {"success": False}), r.text
    elif path.startswith("/runtime/"):
        assert (r.status_code, r.json()) == (400, {"ok": False}), r.text
    else:
        assert r.status_code == 400, r.text
        body = r.json()
        assert set(body) == {"error", "error_description"}, r.text
        assert body["error"] == "invalid_request", r.text


@pytest.mark.parametrize(("path", "keyed", "valid", "field"), ENDPOINTS,
                         ids=[e[0] for e in ENDPOINTS])
def test_hostile_json_is_refused_as_documented_and_writes_nothing(
        server: Server, ctx: dict[str, str], path: str, keyed: bool, valid: dict[str, Any],
        field: str) -> None:
    names = {"PRODUCT": ctx["product"], "CLIENT": ctx["client"]}
    valid = {k: names.get(v, v) if isinstance(v, str) else v for k, v in valid.items()}
    headers = {**(auth(ctx["key"]) if keyed else {}), "content-type": "application/json"}
    before = tables_and_rows(server.database_url, VOLATILE)
    with httpx.Client(timeout=30) as client:
        for case, body in hostile_bodies(valid, field).items():
            r = client.post(server.url + path, content=body, headers=headers)
            try:
                refused(path, r)
            except AssertionError as failed:
                raise AssertionError(f"{case}: {failed}") from None
            if case == "duplicate key" and not path.startswith("/runtime/"):
                assert field in r.json()["error_description"], r.text
        for kind in ("text/plain", "application/x-www-form-urlencoded", None):
            if path.startswith("/auth/") and kind is not None and "form" in kind:
                continue  # the device flow takes forms too (RFC 8628)
            sent = {**headers}
            sent.pop("content-type")
            if kind is not None:
                sent["content-type"] = kind
            r = client.post(server.url + path, content=json.dumps(valid).encode(),
                            headers=sent)
            refused(path, r)
    assert tables_and_rows(server.database_url, VOLATILE) == before
    assert "Traceback" not in server.log()


@pytest.mark.parametrize("path", ["/v1/products", "/v1/licenses", "/v1/alerts",
                                  "/v1/packages/versions"])
def test_zero_byte_in_a_query_is_refused(server: Server, ctx: dict[str, str],
                                         path: str) -> None:
    params = {"product_id": "a\x00b", "cursor": "\x00", "user": "5\x005"}
    r = httpx.get(server.url + path, params=params, headers=auth(ctx["key"]))
    refused(path, r)
    r = httpx.get(f"{server.url}{path}?product_id=%00", headers=auth(ctx["key"]))
    refused(path, r)


def test_zero_byte_in_a_path_or_form_is_refused_in_each_familys_shape(
        server: Server, ctx: dict[str, str]) -> None:
    before = tables_and_rows(server.database_url, VOLATILE)
    for path in ("/v1/products%00", "/auth/device/code%00", "/runtime/unlock%00"):
        r = httpx.post(server.url + path, json={}, headers=auth(ctx["key"]))
        refused(path.removesuffix("%00"), r)
    r = httpx.post(f"{server.url}/runtime/check?x=%00", json={})
    assert (r.status_code, r.json()) == (200, {"success": False})
    r = httpx.get(f"{server.url}/dashboard/a%00b")
    assert r.status_code == 400 and "zero byte" in r.text
    assert r.headers["content-type"].startswith("text/html")
    r = httpx.post(f"{server.url}/auth/device/code",
                   data={"client_id": ctx["client"], "scope": "library:read\x00"})
    refused("/auth/device/code", r)
    r = httpx.post(f"{server.url}/signin", data={"username": "a\x00", "password": "b"})
    assert r.status_code == 400 and "<html" in r.text.lower()
    assert tables_and_rows(server.database_url, VOLATILE) == before


def _signed_in(server: Server, username: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    form = client.get("/signin").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', form)
    assert csrf is not None
    r = client.post("/signin", data={"csrf": csrf.group(1), "username": username,
                                     "password": password})
    assert r.status_code == 303, r.text
    return client


def test_dashboard_settings_with_deep_unlock_data_is_a_clean_page(
        server: Server, ctx: dict[str, str]) -> None:
    client = _signed_in(server, "owner7", "owner-password")
    try:
        page_url = f"/dashboard/{ctx['studio']}/products/{ctx['product']}"
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get(page_url).text)
        assert csrf is not None
        before = tables_and_rows(server.database_url, (*VOLATILE, "web_sessions"))
        for unlock in ("[" * 3000 + "]" * 3000, '{"a": "\\ud800"}', '{"a": 1, "a": 2}',
                       '"\\u0000"', "1e999"):
            r = client.post(page_url + "/settings", data={
                "csrf": csrf.group(1), "placeholder": "", "unlock_data": unlock,
                "protection": "{}"})
            assert r.status_code == 400, (unlock[:20], r.status_code, r.text[:300])
            assert "unlock data must be JSON" in r.text
        assert tables_and_rows(server.database_url, (*VOLATILE, "web_sessions")) == before
    finally:
        client.close()


def test_dashboard_settings_show_back_what_the_seller_saved(
        server: Server, ctx: dict[str, str]) -> None:
    client = _signed_in(server, "owner7", "owner-password")
    try:
        page_url = f"/dashboard/{ctx['studio']}/products/{ctx['product']}"
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get(page_url).text)
        assert csrf is not None
        rules = '{"rules":[{"paths":["*"],"preset":"minify"}],"exclude":["Config"]}'
        r = client.post(page_url + "/settings", data={
            "csrf": csrf.group(1), "placeholder": "LICORE_LICENSE_KEY",
            "unlock_data": '{"level": 3}',
            "protection": rules}, follow_redirects=True)
        assert r.status_code == 200, r.text[r.text.find("<main"):][:600]
        shown = {m.group(1): html.unescape(m.group(2)) for m in re.finditer(
            r'<textarea id="(\w+)"[^>]*>([^<]*)</textarea>', r.text)}
        assert json.loads(shown["unlock_data"]) == {"level": 3}
        assert json.loads(shown["protection"]) == json.loads(rules)
    finally:
        client.close()


def test_device_flow_ignores_unknown_parameters_but_partner_api_refuses_them(
        server: Server, ctx: dict[str, str]) -> None:
    for send in ({"json": {"client_id": ctx["client"], "scope": "library:read",
                           "resource": "https://api.example", "audience": ["x"]}},
                 {"data": {"client_id": ctx["client"], "scope": "library:read",
                           "resource": "https://api.example"}}):
        r = httpx.post(f"{server.url}/auth/device/code", **send)
        assert r.status_code == 200, r.text
        code = r.json()["device_code"]
        r = httpx.post(f"{server.url}/auth/device/token",
                       json={"device_code": code, "resource": "x"})
        assert r.json()["error"] == "authorization_pending", r.text
    r = httpx.post(f"{server.url}/auth/revoke", json={"token": "abc", "resource": "x"})
    assert r.status_code == 200, r.text
    r = httpx.post(f"{server.url}/v1/products", headers=auth(ctx["key"]),
                   json={"title": "T", "resource": "x"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_request")
    assert "resource" in r.json()["error_description"]


@pytest.mark.parametrize("path", ["/v1/products", "/v1/licenses", "/v1/alerts",
                                  "/v1/packages", "/v1/library"])
def test_head_works_wherever_get_does(server: Server, ctx: dict[str, str], path: str) -> None:
    get = httpx.get(server.url + path, headers=auth(ctx["key"]),
                    params={"product_id": ctx["product"]})
    head = httpx.head(server.url + path, headers=auth(ctx["key"]),
                      params={"product_id": ctx["product"]})
    assert head.status_code == get.status_code and head.status_code < 500
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


def test_head_on_pages_and_probes(server: Server) -> None:
    for path in ("/healthz", "/readyz", "/openapi.json", "/signin", "/store"):
        assert httpx.head(server.url + path).status_code == 200, path


def test_405_names_the_allowed_methods(server: Server, ctx: dict[str, str]) -> None:
    r = httpx.put(f"{server.url}/v1/products", headers=auth(ctx["key"]))
    assert r.status_code == 405
    assert set(r.headers["allow"].replace(" ", "").split(",")) >= {"GET", "POST", "HEAD"}
    assert r.json()["error"] == "invalid_request"
    r = httpx.get(f"{server.url}/runtime/check")
    assert r.status_code == 405 and r.headers["allow"] == "POST"


def test_no_traceback_reaches_the_log(server: Server) -> None:
    assert "Traceback" not in server.log()
