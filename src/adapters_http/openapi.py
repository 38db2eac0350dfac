"""The OpenAPI 3.1 document at `/openapi.json`, written as data next to the routes it
describes; a test checks real responses against it, and `openapi-spec-validator` checks the
document itself.

The shapes are written once as constants below; `_finish` turns every use of a named constant
into a `$ref` to `components/schemas`, gives each operation its `operationId`, and documents
the headers every answer carries, so generated clients get one class a shape."""

from __future__ import annotations

from typing import Any

from licore import bounds
from licore.events import TOPICS
from licore.scopes import DESCRIPTIONS

J = dict[str, Any]


def limited(rule: bounds.Text | bounds.WholeNumber) -> J:
    """The JSON Schema of a field bounded by `rule`: the limits are written once, in
    `licore.bounds`, and this document only repeats them."""
    if isinstance(rule, bounds.WholeNumber):
        return {"type": "integer", "minimum": rule.low, "maximum": rule.high}
    schema: J = {"type": "string", "maxLength": rule.max_len}
    if rule.min_len:
        schema["minLength"] = rule.min_len
    if rule.pattern is not None:
        schema["pattern"] = f"^{rule.pattern}$"
    return schema


def obj(required: list[str], **props: J) -> J:
    return {"type": "object", "required": required, "properties": props,
            "additionalProperties": False}


STR: J = {"type": "string"}
BOOL: J = {"type": "boolean"}
INT: J = {"type": "integer"}
NSTR: J = {"type": ["string", "null"]}
TIME: J = {"type": "string", "format": "date-time"}
ID: J = {"type": ["string", "integer"]}

ERROR = obj(["error", "error_description"], error=STR, error_description=STR,
            interval=INT)
PAGE_PARAMS: list[J] = [
    {"name": "limit", "in": "query", "required": False, "schema": limited(bounds.PAGE_LIMIT)},
    {"name": "cursor", "in": "query", "required": False, "schema": limited(bounds.CURSOR)},
]
NEXT = {"next_cursor": NSTR}

PRODUCT = obj(["id", "slug", "title", "tagline", "price_credit", "discoverable",
               "licensing_enabled", "current_version"],
              id=STR, slug=STR, title=STR, tagline=STR, price_credit=INT, discoverable=BOOL,
              licensing_enabled=BOOL, current_version=NSTR)
LICENSE = obj(["id", "platform_id", "verified_at", "is_active", "source"],
              id=STR, platform_id=STR, verified_at=TIME, is_active=BOOL,
              source={"enum": ["purchase_pass", "grant"]},
              state={"enum": ["active", "paused", "inactive"]})
LIBRARY_PRODUCT = obj(["id", "slug", "title", "studio", "current_version", "acquired_at"],
                      id=STR, slug=STR, title=STR, studio=STR, current_version=NSTR,
                      acquired_at=TIME)
VERSION = obj(["id", "version", "size_bytes", "sha256", "live", "created_at"],
              id=STR, version=STR, size_bytes=INT, sha256=STR, live=BOOL, created_at=TIME)
ALERT = obj(["id", "kind", "product_id", "license_id", "platform_id", "key_owner_platform_id",
             "game_id", "script_name", "count", "first_seen_at", "last_seen_at"],
            id=STR, kind={"enum": ["leaked_key", "stolen_product", "key_user_mismatch",
                                   "invalid_key_for_license", "unrecognised_place"]},
            product_id=STR, license_id=NSTR, platform_id=NSTR, key_owner_platform_id=NSTR,
            game_id=NSTR, script_name=NSTR, count=INT, first_seen_at=TIME, last_seen_at=TIME)
PACKAGE = obj(["product_id", "slug", "title", "current_version", "versions", "placeholder",
               "verify_scripts"], product_id=STR, slug=STR, title=STR, current_version=NSTR,
              versions={"type": "array", "items": STR}, placeholder=STR, verify_scripts=BOOL)
PACKAGE_VERSION = obj(["id", "version", "size_bytes", "sha256", "live", "published",
                       "created_at", "format"],
                      id=STR, version=STR, size_bytes=INT, sha256=STR, live=BOOL,
                      published=BOOL, created_at=TIME, format={"enum": ["binary", "xml"]})
CLAIMED = obj(["ok", "result", "product_id", "license"], ok=BOOL,
              result={"enum": ["granted", "already_held", "paused", "revoked"]},
              product_id=STR, license=LICENSE)
SAVED = obj(["ok", "id", "slug", "discoverable"], ok=BOOL, id=STR, slug=STR, discoverable=BOOL)
OK = obj(["ok"], ok=BOOL)
TARGET = obj(["product_id", "user"], product_id=STR, user=STR)
PRODUCT_BODY = obj([], id=limited(bounds.IDENTIFIER), title=limited(bounds.TITLE),
                   tagline=limited(bounds.TAGLINE), description=limited(bounds.DESCRIPTION),
                   price_credit=limited(bounds.PRICE_CREDIT), discoverable=BOOL)


NTIME: J = {"type": ["string", "null"], "format": "date-time"}
NINT: J = {"type": ["integer", "null"]}
def _with(base: J, **more: J) -> J:
    """`base` (an `obj`) with more required properties: `ok: true`, a secret, ..."""
    return obj([*base["required"], *more], **base["properties"], **more)


WEBHOOK = obj(["id", "url", "events", "created_at", "enabled", "disabled_at",
               "disabled_reason", "failing_since", "previous_secret_valid_until"],
              id=STR, url=STR, events={"type": "array", "items": STR}, created_at=TIME,
              enabled=BOOL, disabled_at=NTIME, disabled_reason=NSTR, failing_since=NTIME,
              previous_secret_valid_until=NTIME)
WEBHOOK_SECRET = _with(WEBHOOK, ok=BOOL, secret={"type": "string", "pattern": "^whsec_"})
DELIVERY = obj(["id", "event", "state", "attempts", "created_at", "delivered_at",
                "next_attempt_at", "last_status", "last_error", "last_duration_ms"],
               id=STR, event=STR,
               state={"enum": ["pending", "delivered", "skipped", "dead"]}, attempts=INT,
               created_at=TIME, delivered_at=NTIME, next_attempt_at=NTIME, last_status=NINT,
               last_error=NSTR, last_duration_ms=NINT, endpoint_id=STR, license_id=STR,
               guild_id=STR, role_id=STR)
ROLE = obj(["guild_id", "role_id"], guild_id=STR, role_id=STR)
ROLES = obj(["product_id", "roles"], product_id=STR, roles={"type": "array", "items": ROLE})
BY_ID = obj(["id"], id=STR)


def json_body(schema: J) -> J:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def answers(ok: J, *errors: int, ok_status: int = 200) -> J:
    out: J = {str(ok_status): {"description": "success",
                               "content": {"application/json": {"schema": ok}}}}
    for status in errors:
        out[str(status)] = {"description": _ERROR_TEXT[status],
                            "content": {"application/json": {"schema": ERROR}}}
    return out


_ERROR_TEXT = {
    400: "invalid_request (a field missing, malformed or unknown), or a device-flow error",
    401: "invalid_token: key unknown, revoked or expired",
    403: "insufficient_scope: wrong scope or wrong key kind",
    404: "not_found: the object does not exist or is not the caller's",
    409: "already_owned, or already_exists for a version label",
    413: "payload_too_large",
    429: "rate limited; Retry-After gives seconds",
    500: "server_error; retry",
    503: "platform_unavailable: the game platform did not answer; nothing changed, retry "
         "after Retry-After seconds",
}
PARTNER_ERRORS = (400, 401, 403, 429, 500)


def partner_op(summary: str, scope: str, ok: J, *, body: J | None = None,
               params: list[J] | None = None, extra: tuple[int, ...] = ()) -> J:
    op: J = {"summary": summary, "security": [{"bearer": [scope]}],
             "responses": answers(ok, *sorted({*PARTNER_ERRORS, *extra}))}
    if body is not None:
        op["requestBody"] = json_body(body)
    if params:
        op["parameters"] = params
    return op


def q(name: str, required: bool = True) -> J:
    return {"name": name, "in": "query", "required": required, "schema": STR}


def runtime_op(summary: str, body: J, ok: J) -> J:
    return {"summary": summary, "requestBody": json_body(body),
            "responses": {"200": {"description": "answer (success or denial)",
                                  "content": {"application/json": {"schema": ok}}},
                          "400": {"description": "malformed request: the same failure body",
                                  "content": {"application/json": {"schema": ok}}},
                          "429": {"description": "rate limited: the failure body",
                                  "content": {"application/json": {"schema": ok}}}}}


RUNTIME_BASE = {"user_id": ID, "product_id": STR, "key": STR}
NONCE = limited(bounds.NONCE)
FAIL = obj(["ok"], ok={"const": False})


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
                "deviceAuthorizationUrl": f"{server}/auth/device/code",
                "tokenUrl": f"{server}/auth/device/token",
                "scopes": dict(DESCRIPTIONS)}}}},
            "headers": HEADERS},
        "paths": {
            "/v1/products": {
                "get": partner_op("List the studio's products", "products:read",
                                  obj(["products"], products={"type": "array", "items": PRODUCT},
                                      **NEXT), params=PAGE_PARAMS),
                "post": partner_op("Create (no id) or change (with id) a product",
                                   "products:write", SAVED, body=PRODUCT_BODY, extra=(404,)),
            },
            "/v1/licenses": {
                "get": partner_op("List a product's licenses", "licenses:read",
                                  obj(["licenses"], licenses={"type": "array", "items": LICENSE},
                                      **NEXT),
                                  params=[q("product_id"), *PAGE_PARAMS], extra=(404,)),
                "post": partner_op("Grant a license (re-activates an inactive one)",
                                   "licenses:write", obj(["ok", "license"], ok=BOOL,
                                                         license=LICENSE),
                                   body=TARGET, extra=(404, 409)),
                "delete": partner_op("Revoke a license (kept, key cleared)", "licenses:write",
                                     OK, params=[q("product_id"), q("user")], extra=(404,)),
            },
            "/v1/licenses/pause": {"post": partner_op(
                "Pause a license (extension)", "licenses:write", OK, body=TARGET,
                extra=(404,))},
            "/v1/licenses/resume": {"post": partner_op(
                "Resume a paused license (extension)", "licenses:write", OK, body=TARGET,
                extra=(404,))},
            "/v1/webhooks": {
                "get": partner_op("List the studio's webhook endpoints (extension)",
                                  "licenses:read", obj(["webhooks"], webhooks={
                                      "type": "array", "items": WEBHOOK})),
                "post": partner_op("Add a webhook endpoint; the secret is shown once "
                                   "(extension)", "licenses:write", WEBHOOK_SECRET,
                                   body=obj(["url", "events"], url=STR, events={
                                       "type": "array", "items": {"enum": list(TOPICS)}})),
                "delete": partner_op("Remove a webhook endpoint (extension)", "licenses:write",
                                     OK, params=[q("id")], extra=(404,)),
            },
            "/v1/webhooks/rotate": {"post": partner_op(
                "A new secret; the old one still signs for 24 hours (extension)",
                "licenses:write", WEBHOOK_SECRET, body=BY_ID, extra=(404,))},
            "/v1/webhooks/enable": {"post": partner_op(
                "Turn a disabled endpoint back on (extension)", "licenses:write",
                _with(WEBHOOK, ok=BOOL), body=BY_ID, extra=(404,))},
            "/v1/webhooks/deliveries": {"get": partner_op(
                "The delivery log, newest first (extension)", "licenses:read",
                obj(["deliveries"], deliveries={"type": "array", "items": DELIVERY}, **NEXT),
                params=PAGE_PARAMS)},
            "/v1/webhooks/resend": {"post": partner_op(
                "Send a delivery again now, with the same id (extension)", "licenses:write",
                _with(DELIVERY, ok=BOOL), body=BY_ID, extra=(404,))},
            "/v1/chat-roles": {
                "get": partner_op("The chat roles owning a product earns (extension)",
                                  "products:read", ROLES, params=[q("product_id")],
                                  extra=(404,)),
                "post": partner_op("Replace the chat roles owning a product earns "
                                   "(extension)", "products:write", _with(ROLES, ok=BOOL),
                                   body=obj(["product_id", "roles"], product_id=STR, roles={
                                       "type": "array", "items": ROLE}), extra=(404,)),
            },
            "/v1/chat-roles/hand-outs": {"get": partner_op(
                "Chat-role hand-outs and removals, newest first (extension)", "licenses:read",
                obj(["hand_outs"], hand_outs={"type": "array", "items": DELIVERY}, **NEXT),
                params=PAGE_PARAMS)},
            "/v1/alerts": {"get": partner_op(
                "List the studio's alerts (extension)", "licenses:read",
                obj(["alerts"], alerts={"type": "array", "items": ALERT}, **NEXT),
                params=[q("product_id", False), *PAGE_PARAMS], extra=(404,))},
            "/v1/library": {"get": partner_op(
                "A person's products, or one product's versions with versions=1",
                "library:read",
                {"oneOf": [obj(["products"], products={"type": "array",
                                                        "items": LIBRARY_PRODUCT}, **NEXT),
                           obj(["versions"], versions={"type": "array", "items": VERSION})]},
                params=[q("product_id", False), q("versions", False), *PAGE_PARAMS],
                extra=(404,))},
            "/v1/packages": {"get": partner_op(
                "The studio's packages", "packages:read",
                obj(["packages"], packages={"type": "array", "items": PACKAGE}, **NEXT),
                params=PAGE_PARAMS)},
            "/v1/packages/settings": {"post": partner_op(
                "Set the placeholder, Verify scripts, unlock_data and protection rules",
                "packages:write",
                obj(["ok", "product_id", "slug", "title", "current_version", "placeholder",
                     "verify_scripts", "unlock_data", "protection"], ok=BOOL, product_id=STR,
                    slug=STR, title=STR, current_version=NSTR, placeholder=STR,
                    verify_scripts=BOOL, unlock_data={}, protection={"type": "object"},
                    purchase_pass_id=NSTR),
                body=obj(["product_id"], product_id=STR,
                         placeholder=limited(bounds.PLACEHOLDER),
                         verify_scripts=BOOL, unlock_data={}, protection={"type": "object"},
                         purchase_pass_id={"oneOf": [limited(bounds.PURCHASE_PASS_ID),
                                                     {"type": "integer", "minimum": 1}]}),
                extra=(404,))},
            "/v1/packages/versions": {
                "get": partner_op(
                    "A product's versions, drafts included", "packages:read",
                    obj(["versions"], versions={"type": "array", "items": PACKAGE_VERSION},
                        **NEXT), params=[q("product_id"), *PAGE_PARAMS], extra=(404,)),
                "post": {**partner_op(
                    "Upload a version: the raw .rbxm or .rbxmx file as the body, checked by "
                    "parsing before it is stored", "packages:write",
                    obj(["ok", "version"], ok=BOOL, version=PACKAGE_VERSION),
                    params=[q("product_id"), {**q("version"),
                                              "schema": limited(bounds.VERSION_LABEL)}],
                    extra=(404, 409, 413)),
                    "requestBody": {"required": True, "content": {
                        "application/octet-stream": {"schema": {"type": "string",
                                                                "format": "binary"}}}}},
            },
            "/v1/packages/publish": {"post": partner_op(
                "Make a version live, once the protection rules apply to all its scripts",
                "packages:write",
                obj(["ok", "product_id", "slug", "title", "current_version", "placeholder",
                     "verify_scripts", "version"], ok=BOOL, product_id=STR, slug=STR,
                    title=STR, current_version=NSTR, placeholder=STR, verify_scripts=BOOL,
                    version=PACKAGE_VERSION),
                body=obj(["product_id", "version_id"], product_id=STR, version_id=STR),
                extra=(404,))},
            "/v1/library/claim": {"post": {**partner_op(
                "Extension: claim a product whose purchase pass the person owns on the "
                "platform (granted with source purchase_pass; a revoked license stays "
                "revoked, a paused one paused)", "library:read", CLAIMED,
                body=obj(["product_id"], product_id=limited(bounds.IDENTIFIER)),
                extra=(404, 409, 503)),
                "description": "409 is `pass_not_owned`: the platform says the person does "
                               "not own the product's pass. See docs/platform.md."}},
            "/v1/library/download": {"get": {
                **partner_op("The buyer's own copy of the live build or of version_id",
                             "library:download", {}, params=[q("product_id"),
                                                             q("version_id", False)],
                             extra=(404,)),
                "responses": {
                    "200": {"description": "the model file, in the format it was uploaded in",
                            "headers": {"X-Service-Version": {
                                "description": "the version label", "schema": STR}},
                            "content": {"application/octet-stream": {"schema": {
                                "type": "string", "format": "binary"}},
                                "application/xml": {"schema": STR}}},
                    **{str(c): answers({}, c)[str(c)] for c in (400, 401, 403, 404, 429, 500)},
                }}},
            "/auth/device/code": {"post": {
                "summary": "Start a device authorization (JSON or form body)",
                "requestBody": json_or_form(DEVICE_CODE_BODY),
                "responses": answers(obj(
                    ["device_code", "user_code", "verification_uri",
                     "verification_uri_complete", "expires_in", "interval"],
                    device_code=STR, user_code={"type": "string",
                                                "pattern": "^[A-Z]{4}-[A-Z]{4}$"},
                    verification_uri=STR, verification_uri_complete=STR, expires_in=INT,
                    interval=INT), 400, 429)}},
            "/auth/device/token": {"post": {
                "summary": "Poll for the key (returned once; JSON or form body)",
                "requestBody": json_or_form(TOKEN_BODY),
                "responses": answers(obj(["access_token", "token_type", "scope", "studio_id"],
                                         access_token=STR, token_type={"const": "Bearer"},
                                         scope=STR, studio_id=NSTR), 400)}},
            "/auth/revoke": {"post": {
                "summary": "Revoke the bearer key (any body, JSON or form, is ignored)",
                "security": [{"bearer": []}],
                "responses": answers(OK, 401)}},
            "/runtime/check": {"post": runtime_op(
                "Is this license valid? (forgeable; non-critical checks only)",
                obj(["user_id", "product_id", "key"], **RUNTIME_BASE, game_id=ID),
                obj(["success"], success=BOOL))},
            "/runtime/unlock": {"post": runtime_op(
                "The seller's unlock payload, sealed under the license key",
                obj(["user_id", "product_id", "key", "nonce"], **RUNTIME_BASE, nonce=NONCE,
                    game_id=ID),
                {"oneOf": [obj(["ok", "exp", "cipher", "tag"], ok={"const": True}, exp=INT,
                               cipher=STR, tag=STR), FAIL]})},
            "/runtime/version": {"post": runtime_op(
                "The newest published version label",
                obj(["user_id", "product_id", "key"], **RUNTIME_BASE, current=STR),
                {"oneOf": [obj(["ok", "latest", "update", "fileId"], ok={"const": True},
                               latest=STR, update=BOOL, fileId=STR), FAIL]})},
            "/runtime/update": {"post": runtime_op(
                "The buyer's protected copy of the live build, sealed",
                obj(["user_id", "product_id", "key", "nonce"], **RUNTIME_BASE, nonce=NONCE,
                    current=STR, nodes={"enum": ["compact", "tagged"]}),
                {"oneOf": [obj(["ok", "version", "update", "cipher", "tag"],
                               ok={"const": True}, version=STR, update=BOOL, cipher=STR,
                               tag=STR), FAIL]})},
            "/runtime/verify-source": {"post": runtime_op(
                "Is the running source byte-identical to the stored live source?",
                obj(["user_id", "product_id", "key", "script_name", "source"],
                    **RUNTIME_BASE, script_name=STR, source=STR),
                obj(["ok"], ok=BOOL))},
        },
    }


DEVICE_CODE_BODY = obj(["client_id", "scope"], client_id=STR, scope=STR)
TOKEN_BODY = obj(["device_code"], device_code=STR, grant_type=STR, client_id=STR)


def json_or_form(schema: J) -> J:
    """RFC 8628 clients send forms; licore also takes the same fields as JSON."""
    return {"required": True, "content": {
        "application/json": {"schema": schema},
        "application/x-www-form-urlencoded": {"schema": schema}}}


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
}
RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")

# Every named shape, in components/schemas; each use of one of these objects becomes a $ref.
NAMED: dict[str, J] = {
    "Error": ERROR, "Product": PRODUCT, "License": LICENSE, "LibraryProduct": LIBRARY_PRODUCT,
    "Version": VERSION, "Alert": ALERT, "Package": PACKAGE, "PackageVersion": PACKAGE_VERSION,
    "Saved": SAVED, "Ok": OK, "LicenseTarget": TARGET, "ProductChange": PRODUCT_BODY,
    "RuntimeFailure": FAIL, "DeviceCodeRequest": DEVICE_CODE_BODY,
    "TokenRequest": TOKEN_BODY, "Claim": CLAIMED,
}

OPERATION_IDS: dict[tuple[str, str], str] = {
    ("/v1/products", "get"): "listProducts",
    ("/v1/products", "post"): "saveProduct",
    ("/v1/licenses", "get"): "listLicenses",
    ("/v1/licenses", "post"): "grantLicense",
    ("/v1/licenses", "delete"): "revokeLicense",
    ("/v1/licenses/pause", "post"): "pauseLicense",
    ("/v1/licenses/resume", "post"): "resumeLicense",
    ("/v1/alerts", "get"): "listAlerts",
    ("/v1/webhooks", "get"): "listWebhooks",
    ("/v1/webhooks", "post"): "addWebhook",
    ("/v1/webhooks", "delete"): "removeWebhook",
    ("/v1/webhooks/rotate", "post"): "rotateWebhookSecret",
    ("/v1/webhooks/enable", "post"): "enableWebhook",
    ("/v1/webhooks/deliveries", "get"): "listWebhookDeliveries",
    ("/v1/webhooks/resend", "post"): "resendWebhookDelivery",
    ("/v1/chat-roles", "get"): "listChatRoles",
    ("/v1/chat-roles", "post"): "setChatRoles",
    ("/v1/chat-roles/hand-outs", "get"): "listChatRoleHandOuts",
    ("/v1/library", "get"): "getLibrary",
    ("/v1/packages", "get"): "listPackages",
    ("/v1/packages/settings", "post"): "setPackageSettings",
    ("/v1/packages/versions", "get"): "listPackageVersions",
    ("/v1/packages/versions", "post"): "uploadPackageVersion",
    ("/v1/packages/publish", "post"): "publishPackageVersion",
    ("/v1/library/download", "get"): "downloadCopy",
    ("/v1/library/claim", "post"): "claimPurchase",
    ("/auth/device/code", "post"): "startDeviceAuthorization",
    ("/auth/device/token", "post"): "pollDeviceToken",
    ("/auth/revoke", "post"): "revokeKey",
    ("/runtime/check", "post"): "runtimeCheck",
    ("/runtime/unlock", "post"): "runtimeUnlock",
    ("/runtime/version", "post"): "runtimeVersion",
    ("/runtime/update", "post"): "runtimeUpdate",
    ("/runtime/verify-source", "post"): "runtimeVerifySource",
}


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


def _finish(doc: J) -> J:
    by_id = {id(schema): name for name, schema in NAMED.items()}
    paths = _refs(doc["paths"], by_id)
    for path, operations in paths.items():
        for method, operation in operations.items():
            operation["operationId"] = OPERATION_IDS[(path, method)]
            for status, answer in operation["responses"].items():
                headers = answer.setdefault("headers", {})
                headers["X-Request-ID"] = _ref("X-Request-ID")
                if status in ("429", "503"):
                    headers["Retry-After"] = _ref("Retry-After")
                if path.startswith("/v1/") and status in ("401", "403"):
                    headers["WWW-Authenticate"] = _ref("WWW-Authenticate")
                if path.startswith("/v1/") and status not in ("400", "401", "500"):
                    # authenticated answers; 400 and 500 may come before the key is counted
                    headers.update({h: _ref(h) for h in RATE_HEADERS})
    doc["paths"] = paths
    doc["components"]["schemas"] = {name: _refs(schema, by_id, top=id(schema))
                                    for name, schema in NAMED.items()}
    return doc
