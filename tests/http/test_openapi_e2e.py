"""`/openapi.json` describes the real answers: each response below is checked against it."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
import jsonschema
from PIL import Image

from adapters_formats.codec import RobloxModelCodec
from tests.http.e2e import People, auth, license_key, obtain_key, poll, setup_people, start_flow
from tests.support.models import product_model
from tests.support.server import Server


def picture_png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 3), (1, 2, 3)).save(out, "PNG")
    return out.getvalue()


def check(doc: dict[str, Any], method: str, path: str, response: httpx.Response) -> None:
    operation = doc["paths"][path][method.lower()]
    answers = operation["responses"]
    assert str(response.status_code) in answers, (path, response.status_code, response.text)
    documented = answers[str(response.status_code)]
    media = response.headers.get("content-type", "").split(";")[0]
    assert media in documented["content"], (path, media)
    if media == "application/json":
        # the schema's $refs point into the document's components, so validate with them
        schema = {**documented["content"][media]["schema"], "components": doc["components"]}
        jsonschema.Draft202012Validator(schema).validate(response.json())
    for header, ref in documented.get("headers", {}).items():
        named = (doc["components"]["headers"][ref["$ref"].rsplit("/", 1)[1]]
                 if "$ref" in ref else ref)
        if named.get("required", True):  # a header marked not required comes only at times
            assert header.lower() in response.headers, (path, header)


def test_every_documented_answer_matches_the_document(server: Server) -> None:
    doc = httpx.get(f"{server.url}/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    for schema in doc["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)
    people: People = setup_people(server.database_url, "3")
    seen: set[tuple[str, str]] = set()

    def go(method: str, path: str, response: httpx.Response) -> httpx.Response:
        check(doc, method, path, response)
        seen.add((method.lower(), path))
        return response

    flow = go("POST", "/auth/device/code", start_flow_raw(server, people.client_id))
    go("POST", "/auth/device/token", poll(server, flow.json()["device_code"]))
    go("POST", "/auth/device/code", httpx.post(f"{server.url}/auth/device/code", json={}))
    key = obtain_key(server, people, "products:read products:write licenses:read "
                     "licenses:write", people.owner_id, people.studio_id)
    lib = obtain_key(server, people, "library:read", people.buyer_id, None)
    u = server.url + "/v1"
    h = auth(key)
    made = go("POST", "/v1/products", httpx.post(f"{u}/products", headers=h,
                                                 json={"title": "Doc"}))
    pid = made.json()["id"]
    keyed = h | {"Idempotency-Key": f"doc-{pid}"}
    go("POST", "/v1/products", httpx.post(f"{u}/products", headers=keyed, json={"title": "K"}))
    replayed = go("POST", "/v1/products", httpx.post(f"{u}/products", headers=keyed,
                                                     json={"title": "K"}))
    assert replayed.headers["Idempotent-Replayed"] == "true"
    go("POST", "/v1/products", httpx.post(f"{u}/products", headers=keyed,
                                          json={"title": "Other"}))  # 422
    go("POST", "/v1/products", httpx.post(f"{u}/products", headers=h, json={"title": 1}))
    go("POST", "/v1/products", httpx.post(f"{u}/products", headers=h,
                                          json={"id": "prd_x", "title": "a"}))
    go("GET", "/v1/products", httpx.get(f"{u}/products", headers=h))
    go("GET", "/v1/products", httpx.get(f"{u}/products", headers=h, params={"limit": "1"}))
    go("GET", "/v1/products", httpx.get(f"{u}/products"))
    go("GET", "/v1/products", httpx.get(f"{u}/products", headers=auth(lib)))
    target = {"product_id": pid, "user": "23"}
    go("POST", "/v1/licenses", httpx.post(f"{u}/licenses", headers=h, json=target))
    go("POST", "/v1/licenses", httpx.post(f"{u}/licenses", headers=h, json=target))
    go("GET", "/v1/licenses", httpx.get(f"{u}/licenses", headers=h,
                                        params={"product_id": pid}))
    go("POST", "/v1/licenses/pause", httpx.post(f"{u}/licenses/pause", headers=h, json=target))
    go("POST", "/v1/licenses/resume", httpx.post(f"{u}/licenses/resume", headers=h,
                                                 json=target))
    go("GET", "/v1/library", httpx.get(f"{u}/library", headers=auth(lib)))
    go("GET", "/v1/library", httpx.get(f"{u}/library", headers=auth(lib),
                                       params={"product_id": pid, "versions": "1"}))
    go("GET", "/v1/alerts", httpx.get(f"{u}/alerts", headers=h))
    # A draft is not claimable (404), and the body is checked (400); the claim's other
    # answers are checked against this document in tests/http/test_platform_e2e.py.
    go("POST", "/v1/library/claim", httpx.post(f"{u}/library/claim", headers=auth(lib),
                                               json={"product_id": pid}))
    go("POST", "/v1/library/claim", httpx.post(f"{u}/library/claim", headers=auth(lib),
                                               json={}))
    go("DELETE", "/v1/licenses", httpx.delete(f"{u}/licenses", headers=h, params=target))
    go("DELETE", "/v1/licenses", httpx.delete(f"{u}/licenses", headers=h,
                                              params={"product_id": pid, "user": "1"}))
    go("POST", "/v1/packages/settings", httpx.post(f"{u}/packages/settings", headers=h,
                                                   json={"product_id": pid,
                                                         "unlock_data": {"a": 1}}))
    go("GET", "/v1/packages", httpx.get(f"{u}/packages", headers=h))
    model = RobloxModelCodec().write(product_model())
    pk = obtain_key(server, people, "packages:read packages:write", people.owner_id,
                    people.studio_id)
    pkh = auth(pk)
    ver = go("POST", "/v1/packages/versions", httpx.post(
        f"{u}/packages/versions", headers=pkh, params={"product_id": pid, "version": "1"},
        content=model)).json()["version"]
    go("POST", "/v1/packages/versions", httpx.post(
        f"{u}/packages/versions", headers=pkh, params={"product_id": pid, "version": "1"},
        content=model))
    go("POST", "/v1/packages/versions", httpx.post(
        f"{u}/packages/versions", headers=pkh, params={"product_id": pid, "version": "2"},
        content=b"junk"))
    go("GET", "/v1/packages/versions", httpx.get(f"{u}/packages/versions", headers=pkh,
                                                 params={"product_id": pid}))
    go("POST", "/v1/packages/publish", httpx.post(
        f"{u}/packages/publish", headers=pkh, json={"product_id": pid, "version_id": ver["id"]}))
    go("POST", "/v1/packages/publish", httpx.post(
        f"{u}/packages/publish", headers=pkh, json={"product_id": pid, "version_id": "ver_x"}))
    go("GET", "/v1/packages", httpx.get(f"{u}/packages", headers=pkh))
    dl = obtain_key(server, people, "library:read library:download", people.buyer_id, None)
    go("POST", "/v1/licenses", httpx.post(f"{u}/licenses", headers=h, json=target))
    got = go("GET", "/v1/library/download", httpx.get(
        f"{u}/library/download", headers=auth(dl), params={"product_id": pid}))
    assert got.status_code == 200, got.text
    go("GET", "/v1/library/download", httpx.get(f"{u}/library/download", headers=auth(dl),
                                                params={"product_id": "prd_none"}))
    # Release channels (docs/api.md): a beta build, a buyer following beta, a withdrawal.
    beta = go("POST", "/v1/packages/versions", httpx.post(
        f"{u}/packages/versions", headers=pkh, params={"product_id": pid, "version": "3b"},
        content=model)).json()["version"]
    go("POST", "/v1/packages/publish", httpx.post(
        f"{u}/packages/publish", headers=pkh,
        json={"product_id": pid, "version_id": beta["id"], "channel": "beta"}))
    for channel in ("beta", "nightly"):
        go("POST", "/v1/library/channel", httpx.post(
            f"{u}/library/channel", headers=auth(dl),
            json={"product_id": pid, "channel": channel}))
    go("POST", "/v1/library/channel", httpx.post(
        f"{u}/library/channel", headers=auth(dl), json={"product_id": "prd_none",
                                                        "channel": "beta"}))
    go("GET", "/v1/library", httpx.get(f"{u}/library", headers=auth(dl),
                                       params={"product_id": pid, "versions": "1"}))
    go("GET", "/v1/library", httpx.get(f"{u}/library", headers=auth(dl)))
    for version_id in (beta["id"], "ver_x"):
        go("POST", "/v1/packages/withdraw", httpx.post(
            f"{u}/packages/withdraw", headers=pkh,
            json={"product_id": pid, "version_id": version_id}))
    go("GET", "/v1/packages/versions", httpx.get(f"{u}/packages/versions", headers=pkh,
                                                 params={"product_id": pid}))
    go("POST", "/v1/licenses", httpx.post(f"{u}/licenses", headers=h,
                                          json={"product_id": pid, "user": "77"}))
    lk = license_key(server, pid, "77")
    r = server.url + "/runtime"
    base = {"user_id": 77, "product_id": pid, "key": lk}
    go("POST", "/runtime/check", httpx.post(f"{r}/check", json=base))
    go("POST", "/runtime/check", httpx.post(f"{r}/check", content=b"x"))
    go("POST", "/runtime/unlock", httpx.post(f"{r}/unlock", json={**base, "nonce": "n" * 16}))
    go("POST", "/runtime/unlock", httpx.post(f"{r}/unlock", json={**base, "nonce": "n"}))
    go("POST", "/runtime/version", httpx.post(f"{r}/version", json=base))
    go("POST", "/runtime/version", httpx.post(f"{r}/version", json={**base, "key": "k"}))
    go("POST", "/runtime/update", httpx.post(f"{r}/update", json={**base, "nonce": "u" * 16}))
    go("POST", "/runtime/update", httpx.post(f"{r}/update", json={**base, "nonce": "u"}))
    go("POST", "/runtime/verify-source", httpx.post(f"{r}/verify-source", json={
        **base, "script_name": "Greeter", "source": "print()"}))
    go("POST", "/runtime/verify-source", httpx.post(f"{r}/verify-source", json=base))
    # The events extension (docs/events.md). A public address literal: nothing is resolved,
    # and no event it wants happens here, so nothing is sent to it.
    hook = go("POST", "/v1/webhooks", httpx.post(f"{u}/webhooks", headers=h, json={
        "url": "https://1.1.1.1/hook", "events": ["product.changed"]})).json()
    go("POST", "/v1/webhooks", httpx.post(f"{u}/webhooks", headers=h, json={
        "url": "http://127.0.0.1/hook", "events": ["product.changed"]}))
    go("GET", "/v1/webhooks", httpx.get(f"{u}/webhooks", headers=h))
    go("POST", "/v1/webhooks/rotate", httpx.post(f"{u}/webhooks/rotate", headers=h,
                                                 json={"id": hook["id"]}))
    go("POST", "/v1/webhooks/enable", httpx.post(f"{u}/webhooks/enable", headers=h,
                                                 json={"id": hook["id"]}))
    go("GET", "/v1/webhooks/deliveries", httpx.get(f"{u}/webhooks/deliveries", headers=h,
                                                   params={"limit": "5"}))
    go("POST", "/v1/webhooks/resend", httpx.post(f"{u}/webhooks/resend", headers=h,
                                                 json={"id": "msg_none"}))
    go("DELETE", "/v1/webhooks", httpx.delete(f"{u}/webhooks", headers=h,
                                              params={"id": hook["id"]}))
    roles = {"product_id": pid, "roles": [{"guild_id": "1", "role_id": "2"}]}
    go("POST", "/v1/chat-roles", httpx.post(f"{u}/chat-roles", headers=h, json=roles))
    go("GET", "/v1/chat-roles", httpx.get(f"{u}/chat-roles", headers=h,
                                          params={"product_id": pid}))
    go("GET", "/v1/chat-roles/hand-outs", httpx.get(f"{u}/chat-roles/hand-outs", headers=h))
    # Product images (docs/api.md)
    images = f"{u}/products/images"
    png = {**h, "Content-Type": "image/png"}
    added = go("POST", "/v1/products/images", httpx.post(
        images, headers=png, params={"product_id": pid, "alt": "A picture"},
        content=picture_png()))
    go("POST", "/v1/products/images", httpx.post(images, headers=png, content=b"<svg/>",
                                                 params={"product_id": pid}))
    go("GET", "/v1/products/images", httpx.get(images, headers=h, params={"product_id": pid}))
    go("POST", "/v1/products/images/alt", httpx.post(f"{images}/alt", headers=h, json={
        "product_id": pid, "id": added.json()["image"]["id"], "alt": "A new picture"}))
    go("POST", "/v1/products/images/alt", httpx.post(f"{images}/alt", headers=h, json={
        "product_id": pid, "id": "img_nope", "alt": ""}))
    go("POST", "/v1/products/images/order", httpx.post(f"{images}/order", headers=h, json={
        "product_id": pid, "image_ids": [added.json()["image"]["id"]]}))
    go("DELETE", "/v1/products/images", httpx.delete(images, headers=h, params={
        "product_id": pid, "id": added.json()["image"]["id"]}))
    # Licenses a seller can shape (docs/licenses.md)
    go("GET", "/v1/products/policy", httpx.get(f"{u}/products/policy", headers=h,
                                               params={"product_id": pid}))
    go("POST", "/v1/products/policy", httpx.post(f"{u}/products/policy", headers=h, json={
        "product_id": pid, "place_policy": "enforce", "trial_days": 7,
        "tiers": [{"name": "pro", "unlock_data": {"pro": True}}]}))
    go("POST", "/v1/products/policy", httpx.post(f"{u}/products/policy", headers=h,
                                                 json={"product_id": pid, "place_limit": 0}))
    buyer = {"product_id": pid, "user": "77"}
    go("POST", "/v1/licenses", httpx.post(f"{u}/licenses", headers=h, json={
        "product_id": pid, "user": "79", "duration_days": 30, "tier": "pro"}))
    go("POST", "/v1/licenses/tier", httpx.post(f"{u}/licenses/tier", headers=h,
                                               json={**buyer, "tier": "pro"}))
    go("POST", "/v1/licenses/tier", httpx.post(f"{u}/licenses/tier", headers=h,
                                               json={**buyer, "tier": None}))
    go("POST", "/v1/licenses/renew", httpx.post(f"{u}/licenses/renew", headers=h, json={
        "product_id": pid, "user": "79", "duration_days": 3}))
    go("POST", "/v1/licenses/renew", httpx.post(f"{u}/licenses/renew", headers=h, json=buyer))
    go("GET", "/v1/licenses/places", httpx.get(f"{u}/licenses/places", headers=h,
                                               params=buyer))
    go("POST", "/v1/licenses/places/reset", httpx.post(f"{u}/licenses/places/reset",
                                                       headers=h, json=buyer))
    go("POST", "/v1/licenses/rekey", httpx.post(f"{u}/licenses/rekey", headers=h, json=buyer))
    # usage over time (docs/api.md, "Usage"): a series, and a range refused
    go("GET", "/v1/usage", httpx.get(f"{u}/usage", headers=h, params={
        "product_id": pid, "from": "0", "to": str(3 * 3600)}))
    go("GET", "/v1/usage", httpx.get(f"{u}/usage", headers=h, params={"from": "x", "to": "1"}))
    # the audit trail (docs/audit.md): entries with changes of every kind of value by now
    go("GET", "/v1/audit", httpx.get(f"{u}/audit", headers=h))
    go("GET", "/v1/audit", httpx.get(f"{u}/audit", headers=h, params={"since": "x"}))
    go("GET", "/v1/licenses", httpx.get(f"{u}/licenses", headers=h,
                                        params={"product_id": pid}))
    go("POST", "/v1/licenses/transfer", httpx.post(f"{u}/licenses/transfer", headers=h, json={
        "product_id": pid, "from_user": "77", "to_user": "78"}))
    go("POST", "/v1/licenses/transfer", httpx.post(f"{u}/licenses/transfer", headers=h, json={
        "product_id": pid, "from_user": "79", "to_user": "78"}))
    trial = {"product_id": pid, "user": "80"}
    go("POST", "/v1/licenses/trial", httpx.post(f"{u}/licenses/trial", headers=h, json=trial))
    go("POST", "/v1/licenses/trial", httpx.post(f"{u}/licenses/trial", headers=h, json=trial))
    go("POST", "/v1/library/trial", httpx.post(f"{u}/library/trial", headers=auth(lib),
                                               json={"product_id": pid}))
    go("POST", "/v1/library/trial", httpx.post(f"{u}/library/trial", headers=auth(lib),
                                               json={"product": pid}))
    go("POST", "/v1/library/rekey", httpx.post(f"{u}/library/rekey", headers=auth(lib),
                                               json={"product_id": pid}))
    go("POST", "/v1/library/rekey", httpx.post(f"{u}/library/rekey", headers=auth(lib),
                                               json={"product": pid}))
    go("POST", "/auth/revoke", httpx.post(f"{server.url}/auth/revoke", headers=h))
    go("POST", "/auth/revoke", httpx.post(f"{server.url}/auth/revoke", headers=h))
    documented = {(m, p) for p, ops in doc["paths"].items() for m in ops}
    assert documented <= seen, documented - seen


def start_flow_raw(server: Server, client_id: str) -> httpx.Response:
    start_flow(server, client_id, "library:read")  # the helper asserts 200 itself
    return httpx.post(f"{server.url}/auth/device/code",
                      json={"client_id": client_id, "scope": "library:read"})


def test_the_document_is_valid_openapi_with_ids_refs_forms_and_headers(server: Server) -> None:
    from openapi_spec_validator import validate

    doc = httpx.get(f"{server.url}/openapi.json").json()
    validate(doc)
    operations = [op for ops in doc["paths"].values() for op in ops.values()]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids)) == len(operations)
    # one Error shape for every error answer, so a generated client has one error class
    errors = {json.dumps(a["content"]["application/json"]["schema"])
              for op in operations for status, a in op["responses"].items()
              if status >= "401" and not op["operationId"].startswith("runtime")}
    assert errors == {json.dumps({"$ref": "#/components/schemas/Error"})}
    for path in ("/auth/device/code", "/auth/device/token"):
        content = doc["paths"][path]["post"]["requestBody"]["content"]
        assert {"application/json", "application/x-www-form-urlencoded"} <= set(content)
    grant = doc["paths"]["/v1/licenses"]["post"]["responses"]
    assert "RateLimit-Remaining" in grant["200"]["headers"]
    assert "Retry-After" in grant["429"]["headers"]
    assert "WWW-Authenticate" in grant["401"]["headers"]
