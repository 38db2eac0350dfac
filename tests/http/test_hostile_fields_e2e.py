"""No 500 for anything a client can send, field by field, on SQLite and PostgreSQL over real
HTTP. The fields are not listed by hand: every operation of the server's own `/openapi.json`
gets each of its query parameters and JSON (and form) fields made hostile in turn, and every
form of the pages a signed-in person sees (found by reading the pages) gets each of its
fields made hostile; headers (credentials, cookie, content type, request id, forwarding,
host) are made hostile on every operation. Hostile means: a zero byte, a lone surrogate,
bytes that are not UTF-8, control characters, 3,000 levels of nesting, an over-long value and
a malformed URL. Each answer is below 500 and no traceback reaches the log.

The other hostile modules check each refusal's exact shape on chosen endpoints; this one is
the wide net, so it checks only the one thing that must hold everywhere.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, quote_from_bytes

import httpx
import pytest

from tests.http.e2e import People, auth, obtain_key, owner_key, setup_people
from tests.support.server import Server, running_server

STUDIO_SCOPES = ("products:read products:write licenses:read licenses:write packages:read "
                 "packages:write")

# Raw JSON text put where a field's value goes.
JSON_VALUES: dict[str, str] = {
    "zero byte": '"a\\u0000b"',
    "lone surrogate": '"a\\ud800b"',
    "low surrogate": '"\\udfff"',
    "control": '"\\u0001\\u007f\\u001b"',
    "deep array": "[" * 3000 + "]" * 3000,
    "deep object": '{"a":' * 3000 + "1" + "}" * 3000,
    "over-long": json.dumps("a" * 300_000),
    "malformed url": '"http://[::1/"',
    "zero byte inside": '["\\u0000", {"\\u0000": "\\ud800"}]',
    "huge number": "1" + "0" * 400,
}

# Bytes put where a query parameter's or form field's value goes (percent-encoded on the
# wire, so what arrives is exactly these bytes).
TEXT_VALUES: dict[str, bytes] = {
    "zero byte": b"a\x00b",
    "lone surrogate": "a\ud800b".encode("utf-8", "surrogatepass"),
    "not utf-8": b"caf\xe9\xff",
    "control": b"\x01\x7f\x1b",
    "deep": b"[" * 3000,
    "over-long": b"9" * 6000,
    "malformed url": b"http://[::1/",
    "zero byte url": b"https://a\x00.example/",
}
FORM_LONG = b"a" * 300_000  # forms also get a value longer than any field takes

# Plausible values for the other fields, so that each request gets as far as the hostile one.
PLAUSIBLE: dict[str, Any] = {
    "user": "55", "user_id": "55", "key": "k", "nonce": "n" * 24, "url": "https://example.com/h",
    "events": ["license.granted"], "id": "whk_x", "title": "T", "scope": "library:read",
    "device_code": "abc", "token": "abc", "roles": [], "version_id": "v", "script_name": "Main",
    "source": "print(1)", "current": "v", "nodes": [], "game_id": "1", "placeholder": "x",
    "grant_type": "urn:ietf:params:oauth:grant-type:device_code", "limit": 5,
    "version": "1.0.0", "versions": "true",
}


def _b64(raw: bytes) -> bytes:
    return base64.b64encode(raw)


# Header values (bytes; a client cannot send a raw zero byte or control character in a
# header, so those travel encoded inside the values that are decoded further).
HEADERS: list[tuple[str, bytes]] = [
    ("authorization", b"Basic " + _b64(b"a\x00b:")),
    ("authorization", b"Basic " + _b64("\ud800:".encode("utf-8", "surrogatepass"))),
    ("authorization", b"Basic " + _b64(b"%00:")),
    ("authorization", b"Basic " + _b64(b"%ED%A0%80:x")),
    ("authorization", b"Basic " + _b64(b"\xff\xfe:")),
    ("authorization", b"Basic %%%%"),
    ("authorization", b"Bearer \xff\xfe\xe9"),
    ("authorization", b"Bearer " + b"a" * 6000),
    ("authorization", b"Bearer lk_%00"),
    ("authorization", b"\xff"),
    ("cookie", b"licore_session=\xff\xfe; licore_csrf=\xe9"),
    ("cookie", b"licore_session=" + b"a" * 6000),
    ("cookie", b"licore_session=%00; =; ;;"),
    ("content-type", b"application/json; charset=\xff"),
    ("content-type", b"application/json; charset=utf-16"),
    ("content-type", b"multipart/form-data; boundary="),
    ("content-type", b"application/x-www-form-urlencoded; charset=\xe9"),
    ("x-request-id", b"\xff\xfe" * 10),
    ("x-request-id", b"a" * 6000),
    ("x-forwarded-for", b"\xff, 1.2.3.4.5, [::1"),
    ("accept", b"\xff/\xff"),
    ("host", b"[::1"),
    ("host", b"\xff.example"),
]


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_PARTNER_RATE_LIMIT="1000000",
                        LICORE_RUNTIME_IP_RATE_LIMIT="1000000", LICORE_OUTBOX_WORKERS="0") as s:
        yield s


@pytest.fixture(scope="module")
def ctx(server: Server) -> dict[str, str]:
    people: People = setup_people(server.database_url, "8")
    key = owner_key(server, people, STUDIO_SCOPES)
    library = obtain_key(server, people, "library:read library:download", people.buyer_id,
                         None)
    product = httpx.post(f"{server.url}/v1/products", headers=auth(key),
                         json={"title": "Target"}).json()["id"]
    return {"key": key, "library": library, "product": product, "client": people.client_id,
            "studio": people.studio_id}


def _plausible(ctx: dict[str, str]) -> dict[str, Any]:
    return {**PLAUSIBLE, "product_id": ctx["product"], "client_id": ctx["client"]}


def _operations(server: Server) -> list[tuple[str, str, list[str], dict[str, list[str]]]]:
    """(method, path, query parameters, {media type: body fields}) of every operation."""
    doc = httpx.get(f"{server.url}/openapi.json").json()
    schemas = doc["components"]["schemas"]

    def fields(schema: dict[str, Any]) -> list[str]:
        if "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
        return list(schema.get("properties", {}))

    found = []
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            query = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            bodies = {media: fields(content.get("schema", {}))
                      for media, content in operation.get("requestBody", {})
                      .get("content", {}).items()}
            found.append((method.upper(), path, query, bodies))
    return found


def _key_for(path: str, ctx: dict[str, str]) -> dict[str, str]:
    if path.startswith("/v1/library"):
        return auth(ctx["library"])
    return auth(ctx["key"]) if path.startswith("/v1/") else {}


def _query(values: dict[str, bytes]) -> str:
    return "&".join(f"{quote(k)}={quote_from_bytes(v, safe='')}" for k, v in values.items())


def _answered(client: httpx.Client, failures: list[str], what: str, method: str, url: str,
              **send: Any) -> None:
    try:
        r = client.request(method, url, **send)
    except httpx.RemoteProtocolError:
        return  # the server (Hypercorn) refused to parse it at all: no 500 either
    if r.status_code >= 500:
        failures.append(f"{what}: {method} {url[:120]} -> {r.status_code} {r.text[:200]}")


def _plausible_query(names: list[str], ctx: dict[str, str]) -> dict[str, bytes]:
    values = _plausible(ctx)
    return {n: str(values.get(n, "x")).lower().encode() for n in names}


def _json_with(valid: dict[str, Any], field: str, raw: str) -> bytes:
    mark = "\u2603HOSTILE\u2603"
    return json.dumps({**valid, field: mark}).replace(json.dumps(mark), raw).encode()


def test_every_json_field_and_query_parameter_of_every_operation(
        server: Server, ctx: dict[str, str]) -> None:
    failures: list[str] = []
    values = _plausible(ctx)
    with httpx.Client(timeout=30) as client:
        for method, path, query, bodies in _operations(server):
            url = server.url + path
            headers = _key_for(path, ctx)
            base_query = _plausible_query(query, ctx)
            for name in query:
                for case, raw in TEXT_VALUES.items():
                    sent = _query({**base_query, name: raw})
                    _answered(client, failures, f"query {name} {case}", method,
                              f"{url}?{sent}", headers=headers)
            for media, names in bodies.items():
                valid = {n: values.get(n, "x") for n in names}
                for name in names:
                    if media == "application/json":
                        for case, raw_json in JSON_VALUES.items():
                            _answered(client, failures, f"json {name} {case}", method, url,
                                      content=_json_with(valid, name, raw_json),
                                      headers={**headers, "content-type": media})
                    elif "form" in media:
                        plain = {k: str(v).encode() for k, v in valid.items()}
                        for case, raw in {**TEXT_VALUES, "over-long": FORM_LONG}.items():
                            _answered(client, failures, f"form {name} {case}", method, url,
                                      content=_query({**plain, name: raw}).encode(),
                                      headers={**headers, "content-type": media})
            if not bodies and method == "POST":
                for case, raw_json in JSON_VALUES.items():
                    _answered(client, failures, f"json body {case}", method, url,
                              content=_json_with({}, "token", raw_json),
                              headers={**headers, "content-type": "application/json"})
    assert not failures, "\n".join(failures[:30])
    assert "Traceback" not in server.log()


def test_hostile_headers_on_every_operation(server: Server, ctx: dict[str, str]) -> None:
    failures: list[str] = []
    with httpx.Client(timeout=30) as client:
        for method, path, query, bodies in _operations(server):
            url = f"{server.url}{path}?{_query(_plausible_query(query, ctx))}"
            fields = {n: _plausible(ctx).get(n, "x") for n in bodies.get("application/json", [])}
            for name, value in HEADERS:
                # The device flow takes its client id from Basic credentials when the body
                # has none, so there the body leaves it out.
                body = json.dumps({k: v for k, v in fields.items()
                                   if not (name == "authorization" and k == "client_id")}
                                  ).encode()
                sent = {k.encode(): v.encode() for k, v in _key_for(path, ctx).items()}
                sent[name.encode()] = value
                sent.setdefault(b"content-type", b"application/json")
                _answered(client, failures, f"header {name}={value[:30]!r}", method, url,
                          content=body if method == "POST" else None, headers=sent)
    assert not failures, "\n".join(failures[:30])
    assert "Traceback" not in server.log()


FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.DOTALL | re.IGNORECASE)
FIELD = re.compile(r"<(?:input|textarea|select)\b[^>]*\bname=\"([^\"]+)\"[^>]*>", re.IGNORECASE)
ACTION = re.compile(r'action="([^"]*)"')
HIDDEN = re.compile(r'<input\b[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"')


def _forms(page: str, at: str) -> list[tuple[str, list[str], dict[str, str]]]:
    """(action, field names, hidden values) of each POST form of `page`."""
    found = []
    for attributes, inner in FORM.findall(page):
        if 'method="post"' not in attributes.lower():
            continue
        action = ACTION.search(attributes)
        target = html.unescape(action.group(1)) if action and action.group(1) else at
        hidden = {n: html.unescape(v) for n, v in HIDDEN.findall(inner)}
        found.append((target.split("?")[0], sorted(set(FIELD.findall(inner))), hidden))
    return found


# (The sign-in form is left to test_hostile_e2e.py: wrong passwords here would lock this
# address out of signing in for the other tests.)
EXTRA_FORMS = {"/device/decide": ["code", "decision", "studio_id"], "/device": ["code"]}


def _form_value(name: str, ctx: dict[str, str]) -> str:
    if ":" in name:
        return "on"  # a check box (the webhook form's events)
    return str(_plausible(ctx).get(name, "x"))


def _signed_in(server: Server) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    token = re.search(r'name="csrf" value="([^"]+)"', client.get("/signin").text)
    assert token is not None
    r = client.post("/signin", data={"csrf": token.group(1), "username": "owner8",
                                     "password": "owner-password"})
    assert r.status_code == 303, r.text
    return client


def test_every_form_field_and_page_parameter_of_the_pages(
        server: Server, ctx: dict[str, str]) -> None:
    failures: list[str] = []
    studio = f"/dashboard/{ctx['studio']}"
    pages = ["/", "/signin", "/dashboard", studio, f"{studio}/products/{ctx['product']}",
             "/library", "/apps", "/store", "/device"]
    client = _signed_in(server)
    try:
        forms: dict[str, tuple[list[str], dict[str, str]]] = {}
        for page in pages:
            r = client.get(page)
            assert r.status_code in (200, 303), (page, r.status_code)
            for action, names, hidden in _forms(r.text, page):
                if "signout" not in action:
                    forms.setdefault(action, (names, hidden))
        assert any(a.endswith("/webhooks") for a in forms), sorted(forms)
        assert len(forms) >= 8, sorted(forms)
        # Forms a page shows only at a later step (the approval after a code was entered).
        token = forms[studio + "/products"][1]
        for action, names in EXTRA_FORMS.items():
            forms.setdefault(action, (names, token))
            forms[action] = (sorted({*forms[action][0], *names}), forms[action][1])
        for action, (names, hidden) in sorted(forms.items()):
            for name in names:
                for case, raw in {**TEXT_VALUES, "over-long": FORM_LONG}.items():
                    plain = {n: hidden.get(n, _form_value(n, ctx)).encode() for n in names}
                    plain[name] = raw
                    _answered(client, failures, f"form {name} {case}", "POST",
                              server.url + action, content=_query(plain).encode(),
                              headers={"content-type": "application/x-www-form-urlencoded"})
        params = ["next", "user_code", "code", "state", "error", "product_id", "q", "cursor"]
        for page in [*pages, "/signin/platform/callback", "/chat/callback", "/chat/link",
                     "/signin/platform"]:
            for case, raw in TEXT_VALUES.items():
                # A long value one parameter at a time, so the URL stays within what a
                # client sends at all.
                groups = [[p] for p in params] if len(raw) > 500 else [params]
                for group in groups:
                    _answered(client, failures, f"page query {case}", "GET",
                              f"{server.url}{page}?{_query(dict.fromkeys(group, raw))}")
        for case, segment in {"zero byte": "a%00b", "lone surrogate": "%ED%A0%80",
                              "not utf-8": "%FF%FE", "over-long": "a" * 6000,
                              "malformed url": "http:%2F%2F%5B::1"}.items():
            for method, template in (
                    ("GET", f"{studio}/products/{{}}"), ("GET", "/dashboard/{}"),
                    ("POST", f"{studio}/webhooks/{{}}/rotate"),
                    ("POST", f"{studio}/deliveries/{{}}/resend"),
                    ("GET", "/library/{}/download"), ("POST", "/store/{}/claim"),
                    ("POST", "/apps/{}/revoke")):
                _answered(client, failures, f"path {case}", method,
                          server.url + template.format(segment))
        assert client.get("/dashboard").status_code == 200  # still signed in
    finally:
        client.close()
    assert not failures, "\n".join(failures[:30])
    assert "Traceback" not in server.log()


def test_the_two_known_500s(server: Server, ctx: dict[str, str]) -> None:
    """Issue 30: an unbalanced IPv6 bracket in a webhook URL (API and dashboard), a zero
    byte inside the HTTP Basic client id of the device flow."""
    bad = {"url": "http://[::1/", "events": ["license.granted"]}
    r = httpx.post(f"{server.url}/v1/webhooks", headers=auth(ctx["key"]), json=bad)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", r.text
    assert "url" in r.json()["error_description"].lower()
    client = _signed_in(server)
    try:
        page = f"/dashboard/{ctx['studio']}"
        token = re.search(r'name="csrf" value="([^"]+)"', client.get(page).text)
        assert token is not None
        r = client.post(f"{page}/webhooks", data={"csrf": token.group(1), "url": bad["url"],
                                                  "event:license.granted": "on"})
        assert r.status_code == 400 and "<html" in r.text.lower(), r.status_code
    finally:
        client.close()
    basic = "Basic " + base64.b64encode(f"{ctx['client']}\x00x:".encode()).decode()
    r = httpx.post(f"{server.url}/auth/device/code", headers={"authorization": basic},
                   data={"scope": "library:read"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", r.text
    assert "Traceback" not in server.log()


def test_special_purpose_webhook_addresses_are_refused_and_nothing_is_stored(
        server: Server, ctx: dict[str, str]) -> None:
    """Issue 30: shared address space and 6to4 carrying 127.0.0.1 were accepted. The whole
    table is tests/services/test_webhook_addresses.py; here the API and the database."""
    for url in ("http://100.64.0.1/", "http://[2002:7f00:1::1]/", "http://[64:ff9b::7f00:1]/",
                "http://198.18.0.1/", "http://[::ffff:100.64.0.1]/"):
        r = httpx.post(f"{server.url}/v1/webhooks", headers=auth(ctx["key"]),
                       json={"url": url, "events": ["license.granted"]})
        assert r.status_code == 400, (url, r.text)
        assert "special-purpose" in r.json()["error_description"], r.text
    listed = httpx.get(f"{server.url}/v1/webhooks", headers=auth(ctx["key"]))
    assert listed.status_code == 200 and listed.json()["webhooks"] == [], listed.text
