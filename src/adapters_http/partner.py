"""The Partner API at `{base_url}` = `/v1` (spec 4.2 to 4.4, contract 3), as a route table.

A row names the core's operation (`licore.services.partner`: the scope the call needs and
the use case it runs), how the call's command is read from the body or the query string
(one decoder, `decoding.py`) and how the value it returns becomes the specification's body
(`wire.py`). Each call reaches the core once, through `Partner.call`, which decides who may
do it; nothing here authorizes anything."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters_http import api_doc as d
from adapters_http import wire
from adapters_http.api_doc import Doc
from adapters_http.bodies import bearer, media_type, read_bytes, read_json
from adapters_http.decoding import from_query, structure
from adapters_http.responses import JSONResponse, error_response, file_response
from adapters_http.usage_api import GET_USAGE, usage_answer, usage_query
from licore import commands as c
from licore import images as im
from licore import license_commands as lc
from licore import scopes as sc
from licore.audit import AuditEntry
from licore.errors import AlreadyOwned, InvalidRequest
from licore.events import MessageKind
from licore.model import KeptAnswer, License, Page
from licore.releases import Channel
from licore.services import limits
from licore.services import partner as op
from licore.services.idempotency import HEADER as IDEMPOTENCY_KEY
from licore.services.idempotency import Once
from licore.services.license_lifecycle import Granted
from licore.services.partner import AsOf, Operation, Partner
from licore.services.settings import Settings

MOUNT = "/v1"  # where the app mounts these routes
C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)
R = TypeVar("R")
Answer = dict[str, Any] | Response
Read = Callable[[Request, Settings], Awaitable[C]]
Write = Callable[[C, R], Answer]


@attrs.frozen
class Endpoint(Generic[C, R]):
    method: str
    path: str
    operation: Operation[C, R]
    read: Read[C]
    write: Write[C, R]
    doc: Doc = attrs.field(kw_only=True)  # what /openapi.json says of the call

    @property
    def scope(self) -> str:
        return self.operation.scope

    @property
    def kind(self) -> sc.KeyKind:
        return sc.SCOPES[self.scope][0]


# How a command is read --------------------------------------------------------------------


def query(command: type[C]) -> Read[C]:
    async def read(request: Request, settings: Settings) -> C:
        return from_query(request.query_params, command)

    return read


def body(command: type[C]) -> Read[C]:
    async def read(request: Request, settings: Settings) -> C:
        return structure(await read_json(request), command)

    return read


class Form(Protocol[C_co]):
    def command(self) -> C_co: ...


def form(shape: type[Form[C]]) -> Read[C]:
    """A flat body (`licore.license_commands`' forms) made into its command."""
    async def read(request: Request, settings: Settings) -> C:
        return structure(await read_json(request), shape).command()

    return read


async def nothing(request: Request, settings: Settings) -> None:
    return None


async def product_body(request: Request,
                       settings: Settings) -> c.CreateProduct | c.ChangeProduct:
    """A create without `id`, a change with it (spec 4.2)."""
    sent = await read_json(request)
    if isinstance(sent, dict) and "id" in sent:
        return structure(sent, c.ChangeProduct)
    return structure(sent, c.CreateProduct)


async def library_query(request: Request,
                        settings: Settings) -> c.ListLibrary | c.ListLibraryVersions:
    """The person's products, or with `versions=1` one product's versions (spec 4.4)."""
    asked = request.query_params
    if asked.get("versions") is None:
        return from_query(asked, c.ListLibrary)
    if asked.get("versions") != "1":
        raise InvalidRequest("versions must be 1", "versions")
    if not asked.get("product_id"):
        raise InvalidRequest("product_id is required with versions=1", "product_id")
    return from_query(asked, c.ListLibraryVersions)


async def image_body(request: Request, settings: Settings) -> im.AddImage:
    """The raw image is the body, its format in Content-Type; the product and the alt
    text are in the query."""
    kind = media_type(request)
    if kind not in {k.value for k in im.ImageKind}:
        raise InvalidRequest("send the image as the body with Content-Type: image/png or "
                             "image/jpeg", "content_type")
    command = from_query(request.query_params, im.AddImage, data=b"", content_type=kind)
    return attrs.evolve(command, data=await read_bytes(request, im.MAX_IMAGE_BYTES))


async def upload_body(request: Request, settings: Settings) -> c.UploadVersion:
    """The raw model file is the body; the product and the new label are in the query."""
    command = from_query(request.query_params, c.UploadVersion, data=b"")
    data = await read_bytes(request, settings.max_upload_bytes)
    return attrs.evolve(command, data=data)


# How a value is written -------------------------------------------------------------------


def listing(name: str, item: Callable[[Any], dict[str, Any]]) -> Write[Any, Any]:
    def write(command: Any, page: Any) -> Answer:
        return wire.listing(name, page, item, command.page.limit)

    return write


def ok(command: object, value: object) -> Answer:
    return wire.OK


def library_answer(command: c.ListLibrary | c.ListLibraryVersions, found: Any) -> Answer:
    if isinstance(command, c.ListLibrary):
        return wire.listing("products", found, wire.library_product, command.page.limit)
    return wire.listing("versions", found.page,
                        lambda v: wire.library_version(v, found.product,
                                                       found.follows is Channel.BETA),
                        command.page.limit)


def dated_licenses(command: c.ListLicenses, found: AsOf[Page[License]]) -> Answer:
    return wire.listing("licenses", found.value,
                        lambda lc: wire.license(lc, found.now, found.grace_days or 0),
                        command.page.limit)


def dated_license(command: object, changed: AsOf[License]) -> Answer:
    return wire.granted(changed.value, changed.now)


def grant_answer(command: object, done: AsOf[Granted]) -> Answer:
    """A license already held is the specification's `409 already_owned`, answered (and
    kept for an Idempotency-Key) as any answer is, so the purchase recorded with it stays."""
    if done.value.held:
        return error_response(AlreadyOwned("the user already holds a license for this "
                                           "product"))
    return wire.granted(done.value.license, done.now)


def roles_answer(command: c.ChatRolesOf | c.SetChatRoles, roles: Any) -> Answer:
    shown = {"product_id": command.product_id, "roles": [wire.chat_role(r) for r in roles]}
    return shown if isinstance(command, c.ChatRolesOf) else {"ok": True, **shown}


def audit_answer(command: c.ListAudit, found: Page[AuditEntry]) -> Answer:
    """Always a page, with `next_cursor`: the trail answers 100 entries without `limit`."""
    return wire.listing("entries", found, wire.audit_entry, command.page.limit or 0)


def deliveries(path: str, kind: MessageKind, name: str,
               doc: Doc) -> Endpoint[c.ListDeliveries, Any]:
    return Endpoint("GET", path, op.deliveries(kind), query(c.ListDeliveries),
                    listing(name, wire.delivery), doc=doc)


ENDPOINTS: list[Endpoint[Any, Any]] = [
    Endpoint("GET", "/products", op.LIST_PRODUCTS, query(c.ListProducts),
             listing("products", wire.product),
             doc=d.LIST_PRODUCTS),
    Endpoint("POST", "/products", op.SAVE_PRODUCT, product_body,
             lambda _, made: wire.saved_product(made),
             doc=d.SAVE_PRODUCT),
    Endpoint("GET", "/licenses", op.LIST_LICENSES, query(c.ListLicenses), dated_licenses,
             doc=d.LIST_LICENSES),
    Endpoint("POST", "/licenses", op.GRANT, form(lc.GrantForm), grant_answer,
             doc=d.GRANT_LICENSE),
    Endpoint("DELETE", "/licenses", op.REVOKE, query(c.LicenseTarget), ok,
             doc=d.REVOKE_LICENSE),
    Endpoint("POST", "/licenses/pause", op.PAUSE, body(c.LicenseTarget), ok,
             doc=d.PAUSE_LICENSE),
    Endpoint("POST", "/licenses/resume", op.RESUME, body(c.LicenseTarget), ok,
             doc=d.RESUME_LICENSE),
    Endpoint("GET", "/alerts", op.ALERTS, query(c.ListAlerts), listing("alerts", wire.alert),
             doc=d.LIST_ALERTS),
    Endpoint("GET", "/library", op.LIBRARY, library_query, library_answer,
             doc=d.GET_LIBRARY),
    Endpoint("GET", "/packages", op.LIST_PACKAGES, query(c.ListPackages),
             listing("packages", lambda p: wire.package(p.product, p.labels)),
             doc=d.LIST_PACKAGES),
    Endpoint("POST", "/packages/settings", op.SETTINGS, body(c.ChangeSettings),
             lambda _, saved: {**wire.package_settings(saved.product),
                               "notes": wire.protection_notes(saved.notes)},
             doc=d.SET_PACKAGE_SETTINGS),
    Endpoint("GET", "/packages/versions", op.LIST_VERSIONS, query(c.ListPackageVersions),
             lambda cmd, found: wire.listing(
                 "versions", found.page, lambda v: wire.package_version(v, found.product),
                 cmd.page.limit),
             doc=d.LIST_PACKAGE_VERSIONS),
    Endpoint("POST", "/packages/versions", op.UPLOAD, upload_body,
             lambda _, made: {"ok": True,
                              "version": wire.package_version(made.version, made.product)},
             doc=d.UPLOAD_PACKAGE_VERSION),
    Endpoint("POST", "/packages/publish", op.PUBLISH, body(c.PublishVersion),
             lambda _, done: {**wire.published(done.product, done.version),
                              "notes": wire.protection_notes(done.notes)},
             doc=d.PUBLISH_PACKAGE_VERSION),
    Endpoint("POST", "/packages/withdraw", op.WITHDRAW, body(c.WithdrawVersion),
             lambda _, done: wire.published(done.product, done.version),
             doc=d.WITHDRAW_PACKAGE_VERSION),
    Endpoint("POST", "/library/channel", op.FOLLOW_CHANNEL, body(c.FollowChannel),
             lambda _, held: {"ok": True, "product_id": held.product_id,
                              "channel": held.channel.value},
             doc=d.FOLLOW_CHANNEL),
    Endpoint("GET", "/library/download", op.DOWNLOAD, query(c.DownloadCopy),
             lambda _, got: file_response(got),
             doc=d.DOWNLOAD_COPY),
    Endpoint("POST", "/library/claim", op.CLAIM, body(c.ClaimPurchase),
             lambda _, done: wire.claimed(done),
             doc=d.CLAIM_PURCHASE),
    Endpoint("GET", "/webhooks", op.LIST_WEBHOOKS, nothing,
             lambda _, found: {"webhooks": [wire.webhook(e) for e in found]},
             doc=d.LIST_WEBHOOKS),
    Endpoint("POST", "/webhooks", op.ADD_WEBHOOK, body(c.AddWebhook),
             lambda _, shown: wire.webhook_secret(shown.endpoint, shown.secret),
             doc=d.ADD_WEBHOOK),
    Endpoint("DELETE", "/webhooks", op.REMOVE_WEBHOOK, query(c.WebhookTarget), ok,
             doc=d.REMOVE_WEBHOOK),
    Endpoint("POST", "/webhooks/rotate", op.ROTATE_WEBHOOK, body(c.WebhookTarget),
             lambda _, shown: wire.webhook_secret(shown.endpoint, shown.secret),
             doc=d.ROTATE_WEBHOOK_SECRET),
    Endpoint("POST", "/webhooks/enable", op.ENABLE_WEBHOOK, body(c.WebhookTarget),
             lambda _, done: {"ok": True, **wire.webhook(done)},
             doc=d.ENABLE_WEBHOOK),
    deliveries("/webhooks/deliveries", MessageKind.WEBHOOK, "deliveries",
               d.LIST_WEBHOOK_DELIVERIES),
    Endpoint("POST", "/webhooks/resend", op.RESEND, body(c.WebhookTarget),
             lambda _, again: {"ok": True, **wire.delivery(again)},
             doc=d.RESEND_WEBHOOK_DELIVERY),
    Endpoint("GET", "/chat-roles", op.CHAT_ROLES, query(c.ChatRolesOf), roles_answer,
             doc=d.LIST_CHAT_ROLES),
    Endpoint("POST", "/chat-roles", op.SET_CHAT_ROLES, body(c.SetChatRoles), roles_answer,
             doc=d.SET_CHAT_ROLES),
    deliveries("/chat-roles/hand-outs", MessageKind.CHAT_ROLE, "hand_outs",
               d.LIST_CHAT_ROLE_HAND_OUTS),
    # product images (docs/api.md)
    Endpoint("GET", "/products/images", op.IMAGES, query(im.ImagesOf),
             lambda cmd, found: wire.images(cmd.product_id, found), doc=d.LIST_IMAGES),
    Endpoint("POST", "/products/images", op.ADD_IMAGE, image_body,
             lambda _, made: {"ok": True, "image": wire.image(made)}, doc=d.ADD_IMAGE),
    Endpoint("DELETE", "/products/images", op.REMOVE_IMAGE, query(im.RemoveImage), ok,
             doc=d.REMOVE_IMAGE),
    Endpoint("POST", "/products/images/alt", op.DESCRIBE_IMAGE, body(im.DescribeImage),
             lambda _, described: {"ok": True, "image": wire.image(described)},
             doc=d.DESCRIBE_IMAGE),
    Endpoint("POST", "/products/images/order", op.ORDER_IMAGES, body(im.OrderImages),
             lambda cmd, found: {"ok": True, **wire.images(cmd.product_id, found)},
             doc=d.ORDER_IMAGES),
    Endpoint("GET", "/audit", op.AUDIT, query(c.ListAudit), audit_answer, doc=d.LIST_AUDIT),
    # licore's license shapes (docs/licenses.md)
    Endpoint("POST", "/licenses/transfer", op.TRANSFER, body(lc.TransferLicense),
             lambda _, moved: wire.transferred(moved.value, moved.now),
             doc=d.TRANSFER_LICENSE),
    Endpoint("POST", "/licenses/renew", op.RENEW, form(lc.RenewForm), dated_license,
             doc=d.RENEW_LICENSE),
    Endpoint("POST", "/licenses/trial", op.START_TRIAL, body(c.LicenseTarget), dated_license,
             doc=d.START_TRIAL),
    Endpoint("POST", "/library/trial", op.TAKE_TRIAL, body(lc.TakeTrial), dated_license,
             doc=d.TAKE_TRIAL),
    Endpoint("POST", "/library/rekey", op.REKEY_OWN, body(lc.RekeyOwn), dated_license,
             doc=d.REKEY_OWN),
    Endpoint("POST", "/licenses/rekey", op.REKEY, body(c.LicenseTarget), dated_license,
             doc=d.REKEY_LICENSE),
    Endpoint("POST", "/licenses/tier", op.SET_TIER, form(lc.TierForm), dated_license,
             doc=d.SET_LICENSE_TIER),
    Endpoint("GET", "/licenses/places", op.PLACES, query(c.LicenseTarget),
             lambda _, found: {"places": [wire.place(p) for p in found]},
             doc=d.LIST_LICENSE_PLACES),
    Endpoint("POST", "/licenses/places/reset", op.RESET_PLACES, body(c.LicenseTarget),
             lambda _, forgotten: {"ok": True, "reset": forgotten},
             doc=d.RESET_LICENSE_PLACES),
    Endpoint("GET", "/products/policy", op.POLICY, query(lc.PolicyOf),
             lambda _, policy: wire.license_policy(policy),
             doc=d.GET_LICENSE_POLICY),
    Endpoint("POST", "/products/policy", op.SET_POLICY, body(lc.SetLicensePolicy),
             lambda _, policy: {"ok": True, **wire.license_policy(policy)},
             doc=d.SET_LICENSE_POLICY),
    Endpoint("GET", "/usage", op.USAGE, usage_query, usage_answer, doc=GET_USAGE),
]


def quota_headers(quota: limits.Quota) -> dict[str, str]:
    """The IETF draft's names (RateLimit-*), which API clients and gateways read."""
    return {"RateLimit-Limit": str(quota.limit), "RateLimit-Remaining": str(quota.remaining),
            "RateLimit-Reset": str(quota.reset)}


def noting(request: Request) -> Callable[[str, limits.Quota | None], None]:
    """Where the core notes the key (for the access log) and what is left of its limit (for
    the answer's headers, also on a refusal)."""
    def note(key_id: str, quota: limits.Quota | None) -> None:
        request.state.key_id = key_id
        if quota is not None:
            request.state.quota = quota

    return note


def sent_bearer(request: Request) -> str | None:
    """The bearer key, noting whether any credentials came (a 401 without any says so in
    `WWW-Authenticate` without an error code, RFC 6750 section 3.1)."""
    plain, sent = bearer(request)
    request.state.credentials_sent = sent
    return plain


def response_of(answer: Answer) -> Response:
    return answer if isinstance(answer, Response) else JSONResponse(answer)


def kept(response: Response) -> KeptAnswer:
    return KeptAnswer(response.status_code, response.headers.get("content-type", ""),
                      bytes(response.body))


def fingerprint(request: Request) -> str:
    """Which request an Idempotency-Key was sent with: method, path, query and body. A JSON
    body counts by its content, not its spelling (key order, spaces), so a retry that
    encodes the same object again (a game server's `JSONEncode` orders keys as it likes)
    is the same request."""
    digest = hashlib.sha256()
    query = sorted(request.query_params.multi_items())
    for part in (request.method, request.url.path, json.dumps(query)):
        digest.update(part.encode() + b"\0")
    if hasattr(request.state, "sent_json"):
        digest.update(json.dumps(request.state.sent_json, sort_keys=True,
                                 separators=(",", ":")).encode())
    else:
        digest.update(getattr(request.state, "sent_body", b""))
    return digest.hexdigest()


def idempotency_key(request: Request) -> str | None:
    """The Idempotency-Key sent with a POST (the core checks its shape); several are joined
    as HTTP joins repeated fields, which no key's shape allows."""
    if request.method != "POST":
        return None  # GET and DELETE are idempotent by themselves (RFC 9110 9.2.2)
    sent = request.headers.getlist(IDEMPOTENCY_KEY)
    return ", ".join(sent) if sent else None


def routes(door: Partner, settings: Settings,
           endpoints: list[Endpoint[Any, Any]] = ENDPOINTS) -> list[Route]:
    by_path: dict[str, dict[str, Endpoint[Any, Any]]] = {}
    for e in endpoints:
        by_path.setdefault(e.path, {})[e.method] = e

    async def once(e: Endpoint[Any, Any], request: Request, key: str,
                   read: Callable[[], Awaitable[Any]]) -> Response:
        """A call sent with an Idempotency-Key: its one run's answer, kept in the run's
        transaction, or the answer an earlier run kept (`services.idempotency`)."""
        outcome = await door.call_once(
            e.operation, sent_bearer(request), read, noting(request),
            Once(key, lambda: fingerprint(request),
                 lambda value: kept(response_of(e.write(request.state.command, value)))))
        response = Response(outcome.answer.body, status_code=outcome.answer.status,
                            media_type=outcome.answer.media_type or None)
        if outcome.replayed:
            response.headers["Idempotent-Replayed"] = "true"
        return response

    def make(methods: dict[str, Endpoint[Any, Any]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            e = methods["GET" if request.method == "HEAD" else request.method]

            async def read() -> Any:
                # Asked for once the key is admitted; kept for the writer (a listing's
                # `next_cursor` depends on the limit asked for).
                request.state.command = await e.read(request, settings)
                return request.state.command

            key = idempotency_key(request)
            if key is None:
                value = await door.call(e.operation, sent_bearer(request), read,
                                        noting(request))
                response = response_of(e.write(request.state.command, value))
            else:
                response = await once(e, request, key, read)
            response.headers.update(quota_headers(request.state.quota))
            return response

        return endpoint

    return [Route(path, make(methods), methods=list(methods)) for path, methods in by_path.items()]
