"""What the OpenAPI document says of each call beyond its route: its id, summary and the
JSON Schemas of its body and answers. Each route table entry (`partner.ENDPOINTS`,
`device.ENDPOINTS`, `runtime.ENDPOINTS`) carries one `Doc` from here; `openapi.py` reads
the tables, so a call's method, path and scope are written once, in its table.

The shapes are written once as constants; `openapi.py` turns every use of a shape named in
`NAMED` into a `$ref` to `components/schemas`, so generated clients get one class a shape."""

from __future__ import annotations

from typing import Any

import attrs

from licore import bounds
from licore import commands as c
from licore import license_commands as lc
from licore.events import TOPICS
from licore.images import ALT, DescribeImage, ImageKind, OrderImages
from licore.licenses import GRANT_SOURCES, Source

J = dict[str, Any]


@attrs.frozen(eq=False)
class Doc:
    operation_id: str
    summary: str
    ok: J  # the success answer's JSON Schema
    body: J | None = None  # the request body's schema, sent as each of `media`
    params: list[J] | None = None  # query parameters
    errors: tuple[int, ...] = ()  # error statuses beyond the ones the whole family has
    media: tuple[str, ...] = ("application/json",)
    description: str | None = None
    ok_response: J | None = None  # a success answer that is not JSON, written whole
    # The command a JSON body is read into: a test holds `body`'s properties to its fields.
    reads: type | None = None


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


def _with(base: J, **more: J) -> J:
    """`base` (an `obj`) with more required properties: `ok: true`, a secret, ..."""
    return obj([*base["required"], *more], **base["properties"], **more)


def q(name: str, required: bool = True) -> J:
    return {"name": name, "in": "query", "required": required, "schema": STR}


def array(items: J) -> J:
    return {"type": "array", "items": items}


STR: J = {"type": "string"}
BOOL: J = {"type": "boolean"}
INT: J = {"type": "integer"}
NSTR: J = {"type": ["string", "null"]}
TIME: J = {"type": "string", "format": "date-time"}
NTIME: J = {"type": ["string", "null"], "format": "date-time"}
NINT: J = {"type": ["integer", "null"]}
ID: J = {"type": ["string", "integer"]}
BINARY: J = {"type": "string", "format": "binary"}

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
              source={"enum": [s.value for s in Source]},
              state={"enum": ["active", "paused", "inactive"]},
              # licore's terms (docs/licenses.md), beside the specification's fields
              status={"enum": ["active", "paused", "expired", "inactive"]},
              expires_at=NTIME, tier=NSTR, transferred_to=NSTR, purchase_id=NSTR,
              # in license lists, where the product's grace is known
              in_grace=BOOL, grace_ends_at=NTIME)
CHANNEL = {"enum": ["stable", "beta"]}
LIBRARY_PRODUCT = obj(["id", "slug", "title", "studio", "current_version", "acquired_at",
                       "channel", "beta_version"],
                      id=STR, slug=STR, title=STR, studio=STR, current_version=NSTR,
                      acquired_at=TIME, channel=CHANNEL, beta_version=NSTR)
VERSION = obj(["id", "version", "size_bytes", "sha256", "live", "created_at"],
              id=STR, version=STR, size_bytes=INT, sha256=STR, live=BOOL, created_at=TIME,
              channel=CHANNEL)
ALERT = obj(["id", "kind", "product_id", "license_id", "platform_id", "key_owner_platform_id",
             "game_id", "script_name", "count", "first_seen_at", "last_seen_at"],
            id=STR, kind={"enum": ["leaked_key", "stolen_product", "key_user_mismatch",
                                   "invalid_key_for_license", "unrecognised_place"]},
            product_id=STR, license_id=NSTR, platform_id=NSTR, key_owner_platform_id=NSTR,
            game_id=NSTR, script_name=NSTR, count=INT, first_seen_at=TIME, last_seen_at=TIME)
PACKAGE = obj(["product_id", "slug", "title", "current_version", "versions", "placeholder",
               "verify_scripts", "beta_version"], product_id=STR, slug=STR, title=STR,
              current_version=NSTR, versions=array(STR), placeholder=STR, verify_scripts=BOOL,
              beta_version=NSTR)
PACKAGE_VERSION = obj(["id", "version", "size_bytes", "sha256", "live", "published",
                       "created_at", "format", "channel", "beta", "withdrawn", "withdrawn_at"],
                      id=STR, version=STR, size_bytes=INT, sha256=STR, live=BOOL,
                      published=BOOL, created_at=TIME, format={"enum": ["binary", "xml"]},
                      channel={"enum": ["stable", "beta", None]}, beta=BOOL, withdrawn=BOOL,
                      withdrawn_at={"type": ["string", "null"], "format": "date-time"})
CLAIMED = obj(["ok", "result", "product_id", "license"], ok=BOOL,
              result={"enum": ["granted", "already_held", "paused"]},
              product_id=STR, license=LICENSE)
SAVED = obj(["ok", "id", "slug", "discoverable"], ok=BOOL, id=STR, slug=STR, discoverable=BOOL)
OK = obj(["ok"], ok=BOOL)
# `user`, or (extension) `chat_user`: the person who linked that chat account.
TARGET = obj(["product_id"], product_id=STR, user=STR, chat_user=STR)
PRODUCT_ID = limited(bounds.IDENTIFIER)
USER = limited(bounds.IDENTIFIER)
TIER_NAME = limited(lc.TIER_NAME)
CHAT_USER: J = {**limited(c.CHAT_USER),
                "description": "in place of user: the person who linked this chat account "
                               "(extension)"}
TARGET_BODY = obj(["product_id"], product_id=PRODUCT_ID, user=USER, chat_user=CHAT_USER)
TERMS: J = {"expires_at": {**limited(lc.TIMESTAMP),
                           "description": "unix seconds; later than now"},
            "duration_days": limited(lc.DURATION_DAYS)}
GRANT_BODY = obj(["product_id"], product_id=PRODUCT_ID, user=USER,
                 chat_user=CHAT_USER, **TERMS,
                 tier=TIER_NAME,
                 source={"enum": [s.value for s in GRANT_SOURCES],
                         "description": "where the license came from; grant unless sent"},
                 purchase_id={**limited(lc.PURCHASE_ID),
                              "description": "the sale's id, as the seller's hub names it "
                                             "(a receipt's PurchaseId)"},
                 plan={**limited(lc.PLAN_ID),
                       "description": "one of the product's plans, for its term and tier "
                                      "(instead of expires_at, duration_days and tier)"})
TIER = obj(["name", "unlock_data"], name=TIER_NAME, unlock_data={})
PLAN = obj(["id", "name", "duration_days", "tier"], id=limited(lc.PLAN_ID),
           name=limited(lc.PLAN_NAME), duration_days={**limited(lc.DURATION_DAYS),
                                                      "type": ["integer", "null"]},
           tier={**limited(lc.TIER_NAME), "type": ["string", "null"]})
POLICY = obj(["product_id", "place_limit", "place_policy", "trial_days", "reminder_days",
              "grace_days", "tiers", "plans"],
             product_id=STR, place_limit=INT, place_policy={"enum": ["alert", "enforce"]},
             trial_days=INT, reminder_days=INT, grace_days=INT, tiers=array(TIER),
             plans=array(PLAN))
PRODUCT_BODY = obj([], id=limited(bounds.IDENTIFIER), title=limited(bounds.TITLE),
                   tagline=limited(bounds.TAGLINE), description=limited(bounds.DESCRIPTION),
                   price_credit=limited(bounds.PRICE_CREDIT), discoverable=BOOL)
WEBHOOK = obj(["id", "url", "events", "created_at", "enabled", "disabled_at",
               "disabled_reason", "failing_since", "previous_secret_valid_until"],
              id=STR, url=STR, events=array(STR), created_at=TIME,
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
ROLES = obj(["product_id", "roles"], product_id=STR, roles=array(ROLE))
BY_ID = obj(["id"], id=STR)
SETTINGS = obj(["ok", "product_id", "slug", "title", "current_version", "beta_version",
                "placeholder", "verify_scripts", "unlock_data", "protection"], ok=BOOL,
               product_id=STR, slug=STR, title=STR, current_version=NSTR, beta_version=NSTR,
               placeholder=STR,
               verify_scripts=BOOL, unlock_data={}, protection={"type": "object"},
               purchase_pass_id=NSTR, hub_place_id=NSTR)
SETTINGS_BODY = obj(["product_id"], product_id=STR, placeholder=limited(bounds.PLACEHOLDER),
                    verify_scripts=BOOL, unlock_data={}, protection={"type": "object"},
                    purchase_pass_id={"oneOf": [limited(bounds.PURCHASE_PASS_ID),
                                                {"type": "integer", "minimum": 1}]},
                    hub_place_id={"oneOf": [limited(bounds.HUB_PLACE_ID),
                                            {"type": "integer", "minimum": 1}]})
PUBLISHED = obj(["ok", "product_id", "slug", "title", "current_version", "placeholder",
                 "verify_scripts", "beta_version", "version"], ok=BOOL, product_id=STR,
                slug=STR, title=STR, current_version=NSTR, placeholder=STR,
                verify_scripts=BOOL, beta_version=NSTR, version=PACKAGE_VERSION)

# Extension: what the protector works around in the build (docs/protection.md).
PROTECTION_NOTE = obj(["path", "line", "message"], path=STR, line=NINT, message=STR)
PUBLISHED_WITH_NOTES = _with(PUBLISHED, notes=array(PROTECTION_NOTE))
SETTINGS_WITH_NOTES = _with(SETTINGS, notes=array(PROTECTION_NOTE))

DEVICE_CODE_BODY = obj(["client_id", "scope"], client_id=STR, scope=STR)
TOKEN_BODY = obj(["device_code"], device_code=STR, grant_type=STR, client_id=STR)
# RFC 8628 clients send forms; licore also takes the same fields as JSON.
JSON_OR_FORM = ("application/json", "application/x-www-form-urlencoded")

RUNTIME_BASE = {"user_id": ID, "product_id": STR, "key": STR}
NONCE = limited(bounds.NONCE)
RUNTIME_FAIL = obj(["ok"], ok={"const": False})

# Every named shape, in components/schemas; each use of one of these objects becomes a $ref.
NAMED: dict[str, J] = {
    "Error": ERROR, "Product": PRODUCT, "License": LICENSE, "LibraryProduct": LIBRARY_PRODUCT,
    "Version": VERSION, "Alert": ALERT, "Package": PACKAGE, "PackageVersion": PACKAGE_VERSION,
    "Saved": SAVED, "Ok": OK, "LicenseTarget": TARGET, "ProductChange": PRODUCT_BODY,
    "RuntimeFailure": RUNTIME_FAIL, "DeviceCodeRequest": DEVICE_CODE_BODY,
    "TokenRequest": TOKEN_BODY, "Claim": CLAIMED, "Tier": TIER, "LicensePolicy": POLICY,
}


def _listing(name: str, item: J) -> J:
    return obj([name], **{name: array(item)}, **NEXT)


# The Partner API (partner.ENDPOINTS) -----------------------------------------------------

LIST_PRODUCTS = Doc("listProducts", "List the studio's products",
                    _listing("products", PRODUCT), params=PAGE_PARAMS)
SAVE_PRODUCT = Doc("saveProduct", "Create (no id) or change (with id) a product", SAVED,
                   body=PRODUCT_BODY, errors=(404,), reads=c.ChangeProduct)
LIST_LICENSES = Doc("listLicenses", "List a product's licenses; with user (extension), that "
                    "user's alone", _listing("licenses", LICENSE),
                    params=[q("product_id"), q("user", False), q("chat_user", False),
                            *PAGE_PARAMS], errors=(404,))
CHANGED_LICENSE = obj(["ok", "license"], ok=BOOL, license=LICENSE)
GRANT_LICENSE = Doc("grantLicense", "Grant a license (re-activates an inactive one); "
                    "expires_at, duration_days and tier are extensions",
                    CHANGED_LICENSE, body=GRANT_BODY, errors=(404, 409), reads=lc.GrantForm,
                    description="Send at most one of expires_at and duration_days; neither: "
                                "the license never expires. source and purchase_id record "
                                "the sale a seller's hub took (extensions); a sale is "
                                "remembered as long as its license: the same purchase again "
                                "is 409 already_owned while the license is held and 409 "
                                "license_revoked once the seller revoked it, never a re-grant. "
                                "See docs/licenses.md and docs/selling.md.")
REVOKE_LICENSE = Doc("revokeLicense", "Revoke a license (kept, key cleared)", OK,
                     params=[q("product_id"), q("user", False), q("chat_user", False)],
                     errors=(404,))
PAUSE_LICENSE = Doc("pauseLicense", "Pause a license (extension)", OK, body=TARGET,
                    errors=(404,), reads=c.LicenseTarget)
RESUME_LICENSE = Doc("resumeLicense", "Resume a paused license (extension)", OK, body=TARGET,
                     errors=(404,), reads=c.LicenseTarget)
LIST_ALERTS = Doc("listAlerts", "List the studio's alerts (extension)",
                  _listing("alerts", ALERT), params=[q("product_id", False), *PAGE_PARAMS],
                  errors=(404,))
GET_LIBRARY = Doc("getLibrary", "A person's products, or one product's versions with "
                  "versions=1",
                  {"oneOf": [_listing("products", LIBRARY_PRODUCT),
                             obj(["versions"], versions=array(VERSION))]},
                  params=[q("product_id", False), q("versions", False), *PAGE_PARAMS],
                  errors=(404,))
LIST_PACKAGES = Doc("listPackages", "The studio's packages", _listing("packages", PACKAGE),
                    params=PAGE_PARAMS)
SET_PACKAGE_SETTINGS = Doc(
    "setPackageSettings",
    "Set the placeholder, Verify scripts, unlock_data and protection rules",
    SETTINGS_WITH_NOTES,
    body=SETTINGS_BODY, errors=(404,), reads=c.ChangeSettings)
LIST_PACKAGE_VERSIONS = Doc("listPackageVersions", "A product's versions, drafts included",
                            _listing("versions", PACKAGE_VERSION),
                            params=[q("product_id"), *PAGE_PARAMS], errors=(404,))
UPLOAD_PACKAGE_VERSION = Doc(
    "uploadPackageVersion",
    "Upload a version: the raw .rbxm or .rbxmx file as the body, checked by parsing before "
    "it is stored", obj(["ok", "version"], ok=BOOL, version=PACKAGE_VERSION),
    body=BINARY, media=("application/octet-stream",),
    params=[q("product_id"), {**q("version"), "schema": limited(bounds.VERSION_LABEL)}],
    errors=(404, 409, 413))
PUBLISH_PACKAGE_VERSION = Doc(
    "publishPackageVersion",
    "Make a version live, once the protection rules apply to all its scripts",
    PUBLISHED_WITH_NOTES,
    body=obj(["product_id", "version_id"], product_id=STR, version_id=STR, channel=CHANNEL),
    errors=(400, 404), reads=c.PublishVersion,
    description="Extension: `channel` `beta` publishes to the beta channel instead of making "
                "the version live; `stable` (the default) makes it live and empties the beta "
                "channel. A withdrawn version, or a stable one sent to beta, is `400 "
                "invalid_request`. See docs/api.md, \"Release channels\". Extension: "
                "`notes`, what the protector works around in the build's scripts (a script "
                "calling getfenv keeps its names; types erased from newer syntax), each "
                "with its script's path and line; they do not stop publishing.")
WITHDRAW_PACKAGE_VERSION = Doc(
    "withdrawPackageVersion",
    "Extension: withdraw a published version: offered and downloadable no more; if it was "
    "live, the newest stable version left goes live", PUBLISHED,
    body=obj(["product_id", "version_id"], product_id=STR, version_id=STR),
    errors=(400, 404), reads=c.WithdrawVersion,
    description="A draft is `400 invalid_request`; withdrawing again changes nothing. See "
                "docs/api.md, \"Release channels\".")
FOLLOW_CHANNEL = Doc(
    "followChannel",
    "Extension: the release channel the person follows for a product they hold (beta: opt "
    "in to beta builds)", obj(["ok", "product_id", "channel"], ok=BOOL, product_id=STR,
                              channel=CHANNEL),
    body=obj(["product_id", "channel"], product_id=PRODUCT_ID, channel=CHANNEL),
    errors=(400, 404), reads=c.FollowChannel,
    description="See docs/api.md, \"Release channels\".")
DOWNLOAD_COPY = Doc(
    "downloadCopy", "The buyer's own copy of the live build or of version_id", {},
    params=[q("product_id"), q("version_id", False),
            {"name": "nodes", "in": "query", "required": False,
             "schema": {"enum": ["tagged", "compact"]},
             "description": "Extension: answer the copy as /update-style nodes, JSON "
                            "{version, instances} (docs/api.md)"}], errors=(400, 404),
    ok_response={"description": "the model file, in the format it was uploaded in",
                 "headers": {"X-Service-Version": {"description": "the version label",
                                                   "schema": STR}},
                 "content": {"application/octet-stream": {"schema": BINARY},
                             "application/xml": {"schema": STR},
                             "application/json": {"schema": obj(
                                 ["version", "instances"], version=STR,
                                 instances=array({"type": "object"}))}}})
CLAIM_PURCHASE = Doc(
    "claimPurchase",
    "Extension: claim a product whose purchase pass the person owns on the platform "
    "(granted with source purchase_pass; a paused license stays paused; a revoked one is "
    "refused)", CLAIMED, body=obj(["product_id"], product_id=limited(bounds.IDENTIFIER)),
    errors=(404, 409, 503),
    description="409 is `pass_not_owned` (the platform says the person does not own the "
                "product's pass) or `license_revoked` (the seller revoked the person's "
                "license; a claim never restores it; nothing changed). See docs/platform.md.",
    reads=c.ClaimPurchase)
TAKE_TRIAL = Doc(
    "takeTrial", "Extension: the person starts their one trial of a listed product that "
    "offers one", CHANGED_LICENSE, body=obj(["product_id"], product_id=PRODUCT_ID),
    errors=(404, 409), reads=lc.TakeTrial,
    description="409 is `already_owned`: the person holds or held a license of the product, "
                "or took its trial before. A product without a trial is `400 "
                "invalid_request`. See docs/licenses.md.")
REKEY_OWN = Doc(
    "rekeyOwnLicense", "Extension: the holder's new key for their own license of a product "
    "(the old key and every copy made with it stop working at once)", CHANGED_LICENSE,
    body=obj(["product_id"], product_id=PRODUCT_ID), errors=(404, 429), reads=lc.RekeyOwn,
    description="The key itself is not in the answer: downloads made from now on carry it. "
                "At most 3 a day (UTC) for one license: then 429 with Retry-After. A revoked "
                "license is 400 invalid_request. Told in the studio's audit trail as "
                "license.rekeyed. See docs/licenses.md.")
LIST_WEBHOOKS = Doc("listWebhooks", "List the studio's webhook endpoints (extension)",
                    obj(["webhooks"], webhooks=array(WEBHOOK)))
ADD_WEBHOOK = Doc("addWebhook", "Add a webhook endpoint; the secret is shown once "
                  "(extension)", WEBHOOK_SECRET,
                  body=obj(["url", "events"], url=STR, events=array({"enum": list(TOPICS)})),
                  reads=c.AddWebhook)
REMOVE_WEBHOOK = Doc("removeWebhook", "Remove a webhook endpoint (extension)", OK,
                     params=[q("id")], errors=(404,))
ROTATE_WEBHOOK_SECRET = Doc(
    "rotateWebhookSecret", "A new secret; the old one still signs for 24 hours (extension)",
    WEBHOOK_SECRET, body=BY_ID, errors=(404,), reads=c.WebhookTarget)
ENABLE_WEBHOOK = Doc("enableWebhook", "Turn a disabled endpoint back on (extension)",
                     _with(WEBHOOK, ok=BOOL), body=BY_ID, errors=(404,), reads=c.WebhookTarget)
LIST_WEBHOOK_DELIVERIES = Doc("listWebhookDeliveries",
                              "The delivery log, newest first (extension)",
                              _listing("deliveries", DELIVERY), params=PAGE_PARAMS)
RESEND_WEBHOOK_DELIVERY = Doc("resendWebhookDelivery",
                              "Send a delivery again now, with the same id (extension)",
                              _with(DELIVERY, ok=BOOL), body=BY_ID, errors=(404,),
                              reads=c.WebhookTarget)
LIST_CHAT_ROLES = Doc("listChatRoles", "The chat roles owning a product earns (extension)",
                      ROLES, params=[q("product_id")], errors=(404,))
SET_CHAT_ROLES = Doc("setChatRoles", "Replace the chat roles owning a product earns "
                     "(extension)", _with(ROLES, ok=BOOL),
                     body=obj(["product_id", "roles"], product_id=STR, roles=array(ROLE)),
                     errors=(404,), reads=c.SetChatRoles)
LIST_CHAT_ROLE_HAND_OUTS = Doc("listChatRoleHandOuts",
                               "Chat-role hand-outs and removals, newest first (extension)",
                               _listing("hand_outs", DELIVERY), params=PAGE_PARAMS)

# product images (docs/api.md, "Product images", extensions)

IMAGE = obj(["id", "position", "path", "content_type", "width", "height", "size_bytes",
             "sha256", "alt", "created_at"],
            id=STR, position=INT, path=STR, content_type={"enum": [k.value for k in ImageKind]},
            width=INT, height=INT, size_bytes=INT, sha256=STR, alt=STR, created_at=TIME)
IMAGES = obj(["product_id", "images"], product_id=STR, images=array(IMAGE))
LIST_IMAGES = Doc("listProductImages", "A product's images in store order (extension)",
                  IMAGES, params=[q("product_id")], errors=(404,))
ADD_IMAGE = Doc(
    "addProductImage",
    "Add an image: the raw PNG or JPEG file as the body, at most 2 MiB (extension)",
    obj(["ok", "image"], ok=BOOL, image=IMAGE), body=BINARY,
    media=tuple(k.value for k in ImageKind),
    params=[q("product_id"), {**q("alt", False), "schema": limited(ALT)}],
    errors=(404, 409, 413),
    description="The file is decoded within limits and encoded again; what is stored and "
                "served holds no metadata. 400: not PNG or JPEG, not what Content-Type says, "
                "damaged, bytes after the image, over 4096 pixels a side, or the product "
                "has 8 images. 409 `already_exists`: the product has this image. See "
                "docs/api.md.")
REMOVE_IMAGE = Doc("removeProductImage", "Remove an image (extension)", OK,
                   params=[q("product_id"), q("id")], errors=(404,))
DESCRIBE_IMAGE = Doc("describeProductImage", "Change an image's text for people who cannot see "
                     "it (extension)", obj(["ok", "image"], ok=BOOL, image=IMAGE),
                     body=obj(["product_id", "id", "alt"], product_id=PRODUCT_ID, id=STR,
                              alt=limited(ALT)),
                     errors=(404,), reads=DescribeImage)
ORDER_IMAGES = Doc("orderProductImages", "Put a product's images in a new order: every one, "
                   "each once (extension)", _with(IMAGES, ok=BOOL),
                   body=obj(["product_id", "image_ids"], product_id=PRODUCT_ID,
                            image_ids=array(STR)),
                   errors=(404,), reads=OrderImages)
# the audit trail (docs/audit.md, an extension)

ANY: J = {}  # a changed field's value: a string, number, boolean, list of names or null
AUDIT_ENTRY = obj(
    ["id", "at", "actor", "request_id", "action", "subject", "changes"],
    id=STR, at=TIME,
    actor=obj(["kind", "id", "key_id"],
              kind={"enum": ["person", "app", "operator", "platform", "service"]}, id=STR,
              key_id=NSTR),
    request_id=NSTR, action=STR, subject=obj(["type", "id"], type=STR, id=STR),
    changes=array(obj(["field", "shown", "old", "new"], field=STR, shown=BOOL, old=ANY,
                      new=ANY)))
_MOMENT = limited(bounds.MOMENT)
LIST_AUDIT = Doc(
    "listAudit", "The studio's audit trail, newest first (extension)",
    _listing("entries", AUDIT_ENTRY),
    params=[{**q(name, False), "schema": limited(bounds.IDENTIFIER)}
            for name in ("action", "actor", "subject")]
    + [{"name": name, "in": "query", "required": False, "schema": _MOMENT}
       for name in ("since", "until")] + PAGE_PARAMS,
    description="`action` is an action (`license.revoked`) or its family (`license`); "
                "`actor` an actor's kind, id or key id; `subject` a subject's type or id; "
                "`since` and `until` unix seconds, both inclusive. Without `limit`, 100 "
                "entries and `next_cursor`.")

# licore's license shapes (docs/licenses.md, extensions)

TRANSFER_LICENSE = Doc(
    "transferLicense", "Move a license to another person: a new key for them, the old "
    "record kept inactive (extension)",
    obj(["ok", "license", "transferred_from"], ok=BOOL, license=LICENSE,
        transferred_from=LICENSE),
    body=obj(["product_id", "from_user", "to_user"], product_id=PRODUCT_ID, from_user=USER,
             to_user=USER),
    errors=(404, 409), reads=lc.TransferLicense,
    description="409 is `already_owned`: the target holds the product. A paused, expired or "
                "inactive source is `400 invalid_request`.")
RENEW_LICENSE = Doc(
    "renewLicense", "Extend a license's end, or set it (extension)", CHANGED_LICENSE,
    body=obj(["product_id", "user"], product_id=PRODUCT_ID, user=USER, **TERMS),
    errors=(404,), reads=lc.RenewForm,
    description="Send exactly one of expires_at and duration_days.")
START_TRIAL = Doc(
    "startTrial", "Start a person's trial of the product: one per person and product, ever "
    "(extension)", CHANGED_LICENSE,
    body=TARGET_BODY,
    errors=(404, 409), reads=c.LicenseTarget,
    description="409 is `already_owned`: the person holds or held a license of the product, "
                "or took its trial before. A product without a trial is `400 "
                "invalid_request`.")
REKEY_LICENSE = Doc("rekeyLicense", "A new key for a license; the old one and its copies "
                    "stop working at once (extension)", CHANGED_LICENSE,
                    body=TARGET_BODY,
                    errors=(404,), reads=c.LicenseTarget)
SET_LICENSE_TIER = Doc(
    "setLicenseTier", "Put a license on one of the product's tiers; null: none (extension)",
    CHANGED_LICENSE,
    body=obj(["product_id", "user", "tier"], product_id=PRODUCT_ID, user=USER,
             tier={"oneOf": [TIER_NAME, {"type": "null"}]}),
    errors=(404,), reads=lc.TierForm)
LIST_LICENSE_PLACES = Doc(
    "listLicensePlaces", "The places (games) a license was used from, first seen first "
    "(extension)",
    obj(["places"], places=array(obj(["game_id", "rank", "first_seen_at"], game_id=STR,
                                     rank=INT, first_seen_at=TIME))),
    params=[q("product_id"), q("user", False), q("chat_user", False)], errors=(404,))
RESET_LICENSE_PLACES = Doc(
    "resetLicensePlaces", "Forget a license's places: the next ones count from 1 "
    "(extension)", obj(["ok", "reset"], ok=BOOL, reset=INT),
    body=TARGET_BODY, errors=(404,),
    reads=c.LicenseTarget)
GET_LICENSE_POLICY = Doc(
    "getLicensePolicy", "A product's place limit and policy, trial length, reminder and tiers "
    "(extension)", POLICY, params=[q("product_id")], errors=(404,))
SET_LICENSE_POLICY = Doc(
    "setLicensePolicy", "Change a product's place limit and policy, trial length, reminder or "
    "tiers; "
    "fields not sent stay (extension)", _with(POLICY, ok=BOOL),
    body=obj(["product_id"], product_id=PRODUCT_ID, place_limit=limited(lc.PLACE_LIMIT),
             place_policy={"enum": ["alert", "enforce"]}, trial_days=limited(lc.TRIAL_DAYS),
             reminder_days=limited(lc.REMINDER_DAYS), grace_days=limited(lc.GRACE_DAYS),
             tiers={**array(TIER), "maxItems": lc.MAX_TIERS},
             plans={**array(obj(["id", "name"], id=limited(lc.PLAN_ID),
                                name=limited(lc.PLAN_NAME),
                                duration_days=limited(lc.DURATION_DAYS),
                                tier=limited(lc.TIER_NAME))),
                    "maxItems": lc.MAX_PLANS}),
    errors=(404,), reads=lc.SetLicensePolicy,
    description="tiers replaces the whole list (an empty list removes every tier); "
                "trial_days 0 removes the trial, reminder_days 0 the reminder, grace_days "
                "0 the grace (days a license stays in force past its end). plans replaces the "
                "whole list: each {id, name, duration_days (none: for good), tier (one of "
                "the tiers, or none)}.")

# The device authorization flow (device.ENDPOINTS) -----------------------------------------

START_DEVICE_AUTHORIZATION = Doc(
    "startDeviceAuthorization", "Start a device authorization (JSON or form body)",
    obj(["device_code", "user_code", "verification_uri", "verification_uri_complete",
         "expires_in", "interval"],
        device_code=STR, user_code={"type": "string", "pattern": "^[A-Z]{4}-[A-Z]{4}$"},
        verification_uri=STR, verification_uri_complete=STR, expires_in=INT, interval=INT),
    body=DEVICE_CODE_BODY, media=JSON_OR_FORM, errors=(400, 429), reads=c.StartAuthorization)
POLL_DEVICE_TOKEN = Doc(
    "pollDeviceToken", "Poll for the key (returned once; JSON or form body)",
    obj(["access_token", "token_type", "scope", "studio_id"], access_token=STR,
        token_type={"const": "Bearer"}, scope=STR, studio_id=NSTR),
    body=TOKEN_BODY, media=JSON_OR_FORM, errors=(400,), reads=c.PollToken)
REVOKE_KEY = Doc("revokeKey", "Revoke the bearer key (any body, JSON or form, is ignored)",
                 OK, errors=(401,))

# The Runtime API (runtime.ENDPOINTS) ------------------------------------------------------

RUNTIME_CHECK = Doc(
    "runtimeCheck", "Is this license valid? (forgeable; non-critical checks only)",
    obj(["success"], success=BOOL),
    body=obj(["user_id", "product_id", "key"], **RUNTIME_BASE, game_id=ID), reads=c.Check)
RUNTIME_UNLOCK = Doc(
    "runtimeUnlock", "The seller's unlock payload, sealed under the license key",
    {"oneOf": [obj(["ok", "exp", "cipher", "tag"], ok={"const": True}, exp=INT, cipher=STR,
                   tag=STR), RUNTIME_FAIL]},
    body=obj(["user_id", "product_id", "key", "nonce"], **RUNTIME_BASE, nonce=NONCE,
             game_id=ID, sealed_for=limited(bounds.SEALED_FOR)), reads=c.Unlock)
RUNTIME_VERSION = Doc(
    "runtimeVersion", "The newest published version label",
    {"oneOf": [obj(["ok", "latest", "update", "fileId"], ok={"const": True}, latest=STR,
                   update=BOOL, fileId=STR), RUNTIME_FAIL]},
    body=obj(["user_id", "product_id", "key"], **RUNTIME_BASE, current=STR, channel=CHANNEL),
    reads=c.AskVersion)
RUNTIME_UPDATE = Doc(
    "runtimeUpdate", "The buyer's protected copy of the live build, sealed",
    {"oneOf": [obj(["ok", "version", "update", "cipher", "tag"], ok={"const": True},
                   version=STR, update=BOOL, cipher=STR, tag=STR),
               # extension: "delivery": "file" (docs/runtime.md, "Updates as files")
               obj(["ok", "exp", "version", "update", "file", "cipher", "tag"],
                   ok={"const": True}, exp=INT, version=STR, update={"const": True},
                   file=obj(["url", "sha256", "size"], url=STR, sha256=STR, size=INT,
                            compression={"const": "zstd"}),
                   cipher=STR, tag=STR),
               RUNTIME_FAIL]},
    body=obj(["user_id", "product_id", "key", "nonce"], **RUNTIME_BASE, nonce=NONCE,
             current=STR, nodes={"enum": ["compact", "tagged"]}, channel=CHANNEL,
             delivery={"enum": ["sealed", "file"]}, compression={"enum": ["zstd"]}),
    reads=c.Update)
RUNTIME_VERIFY_SOURCE = Doc(
    "runtimeVerifySource", "Is the running source byte-identical to the stored live source?",
    obj(["ok"], ok=BOOL),
    body=obj(["user_id", "product_id", "key", "script_name", "source"], **RUNTIME_BASE,
             script_name=STR, source=STR), reads=c.VerifySource)
