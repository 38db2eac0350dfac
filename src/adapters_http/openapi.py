"""The OpenAPI 3.1 document at `/openapi.json`, generated from the route tables it
describes (`partner.ENDPOINTS`, `device.ENDPOINTS`, `runtime.ENDPOINTS`): each call's method,
path and scope come from its table entry, its id, summary and shapes from the entry's `Doc`
(`api_doc.py`). A test checks real responses against it, and `openapi-spec-validator` checks
the document itself.

`_finish` turns every use of a named shape into a `$ref` to `components/schemas` and
documents the headers every answer carries."""

from __future__ import annotations

from typing import Any

from adapters_http import device, partner, runtime
from adapters_http.api_doc import ERROR, INT, NAMED, STR, Doc, J, limited
from licore.scopes import DESCRIPTIONS
from licore.services import idempotency

_ERROR_TEXT = {
    400: "invalid_request (a field missing, malformed or unknown), or a device-flow error",
    401: "invalid_token: key unknown, revoked or expired",
    403: "insufficient_scope: wrong scope or wrong key kind",
    404: "not_found: the object does not exist or is not the caller's",
    409: "already_owned; license_revoked for a claim or a recorded sale the seller revoked; "
         "already_exists for a version label",
    413: "payload_too_large",
    422: "idempotency_key_reused: the Idempotency-Key answered a different request (another "
         "body, path or method) in the last 24 hours; use a new key",
    429: "rate limited; Retry-After gives seconds",
    500: "server_error; retry",
    503: "platform_unavailable: the game platform did not answer; nothing changed, retry "
         "after Retry-After seconds",
}
PARTNER_ERRORS = (400, 401, 403, 429, 500)
# Every Partner POST takes an Idempotency-Key (extension; docs/api.md, "Retrying safely").
IDEMPOTENCY_KEY: J = {
    "name": idempotency.HEADER, "in": "header", "required": False,
    "schema": limited(idempotency.KEY),
    "description": "Extension (the convention of Stripe and Keygen): the same key with the "
                   "same request within 24 hours gets the first successful answer again, "
                   "status and body, with `Idempotent-Replayed: true`, and changes nothing "
                   "more; concurrent requests with one key run once. A refusal (4xx) or a "
                   "5xx is not kept: a retry runs again. Keys belong to the caller's studio "
                   "(a library key's: its person). See docs/api.md."}


def _json(schema: J) -> J:
    return {"application/json": {"schema": schema}}


def _operation(doc: Doc, security: list[J] | None, responses: J) -> J:
    op: J = {"summary": doc.summary}
    if doc.description is not None:
        op["description"] = doc.description
    if security is not None:
        op["security"] = security
    if doc.body is not None:
        op["requestBody"] = {"required": True,
                             "content": {m: {"schema": doc.body} for m in doc.media}}
    if doc.params:
        op["parameters"] = doc.params
    op["responses"] = responses
    op["operationId"] = doc.operation_id
    return op


def _answers(doc: Doc, errors: tuple[int, ...]) -> J:
    """The success answer, then each error status's, in the one Error shape."""
    ok = doc.ok_response or {"description": "success", "content": _json(doc.ok)}
    out: J = {"200": ok}
    for status in sorted({*errors, *doc.errors}):
        out[str(status)] = {"description": _ERROR_TEXT[status], "content": _json(ERROR)}
    return out


def _runtime_answers(doc: Doc) -> J:
    """Every runtime answer is the success body or exactly the failure body."""
    return {"200": {"description": "answer (success or denial)", "content": _json(doc.ok)},
            "400": {"description": "malformed request: the same failure body",
                    "content": _json(doc.ok)},
            "429": {"description": "rate limited: the failure body", "content": _json(doc.ok)}}


def _paths() -> J:
    paths: J = {}
    for p in partner.ENDPOINTS:
        keyed = p.method == "POST"
        op = _operation(p.doc, [{"bearer": [p.scope]}],
                        _answers(p.doc, PARTNER_ERRORS + ((422,) if keyed else ())))
        if keyed:
            op["parameters"] = [*op.get("parameters", []), IDEMPOTENCY_KEY]
        paths.setdefault(partner.MOUNT + p.path, {})[p.method.lower()] = op
    for d in device.ENDPOINTS:
        paths.setdefault(device.MOUNT + d.path, {})[d.method.lower()] = _operation(
            d.doc, [{"bearer": []}] if d.bearer else None, _answers(d.doc, ()))
    for r in runtime.ENDPOINTS:
        paths.setdefault(runtime.MOUNT + r.path, {})["post"] = _operation(
            r.doc, None, _runtime_answers(r.doc))
    return paths


def openapi_document(server: str) -> J:
    return _finish(_document(server))


def _document(server: str) -> J:
    return {
        "openapi": "3.1.0",
        "info": {"title": "licore", "version": "1",
                 "description": "Partner API, device authorization flow and Runtime API."},
        "servers": [{"url": server}],
        "components": {"securitySchemes": {"bearer": {
            # OpenAPI 3.1 has no device-authorization flow (3.2 adds one), so the flow rides
            # in an extension; the key itself is a plain bearer token with these scopes.
            "type": "oauth2",
            "description": "An API key from the OAuth 2.0 device authorization grant (RFC "
                           "8628), sent as `Authorization: Bearer <key>`; metadata at "
                           "/.well-known/oauth-authorization-server",
            "flows": {"x-deviceAuthorization": {
                "deviceAuthorizationUrl": f"{server}{device.MOUNT}/device/code",
                "tokenUrl": f"{server}{device.MOUNT}/device/token",
                "scopes": dict(DESCRIPTIONS)}}}},
            "headers": HEADERS},
        "paths": _paths(),
    }


def _header(description: str, schema: J = STR) -> J:
    return {"description": description, "schema": schema}


HEADERS: J = {
    "X-Request-ID": _header("The request's id, as sent in X-Request-ID or made by the "
                            "server; every log line of the request carries it"),
    "Retry-After": _header("Seconds to wait before trying again", INT),
    "WWW-Authenticate": _header("Bearer challenge (RFC 6750): invalid_token or "
                                "insufficient_scope with the scope needed"),
    "RateLimit-Limit": _header("Partner calls allowed a minute for this key", INT),
    "RateLimit-Remaining": _header("Partner calls left in this minute", INT),
    "RateLimit-Reset": _header("Seconds until the minute's window starts again", INT),
    # Only on a replayed answer: not required, unlike the headers above.
    "Idempotent-Replayed": {**_header("`true` on an answer replayed for an Idempotency-Key "
                                      "(extension): the call did not run again",
                                      {"const": "true"}), "required": False},
}
RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


def _ref(header: str) -> J:
    return {"$ref": f"#/components/headers/{header}"}


def _refs(node: Any, by_id: dict[int, str], top: int | None = None) -> Any:
    """A copy of `node` where each named shape (found by identity) is a $ref."""
    if isinstance(node, dict):
        if id(node) in by_id and id(node) != top:
            return {"$ref": f"#/components/schemas/{by_id[id(node)]}"}
        return {k: _refs(v, by_id) for k, v in node.items()}
    if isinstance(node, list):
        return [_refs(v, by_id) for v in node]
    return node


def _answer_headers(partner_call: bool, method: str, status: str) -> list[str]:
    """The headers an answer of this status carries."""
    names = ["X-Request-ID"]
    if partner_call and method == "post" and status == "200":
        names.append("Idempotent-Replayed")  # on a replay only (docs/api.md)
    if status in ("429", "503"):
        names.append("Retry-After")
    if partner_call and status in ("401", "403"):
        names.append("WWW-Authenticate")
    if partner_call and status not in ("400", "401", "500"):
        # authenticated answers; 400 and 500 may come before the key is counted
        names.extend(RATE_HEADERS)
    return names


def _finish(doc: J) -> J:
    by_id = {id(schema): name for name, schema in NAMED.items()}
    paths = _refs(doc["paths"], by_id)
    for path, operations in paths.items():
        partner_call = path.startswith(partner.MOUNT + "/")
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                answer.setdefault("headers", {}).update(
                    {h: _ref(h) for h in _answer_headers(partner_call, method, status)})
    doc["paths"] = paths
    doc["components"]["schemas"] = {name: _refs(schema, by_id, top=id(schema))
                                    for name, schema in NAMED.items()}
    return doc
