"""The Partner API at `{base_url}` = `/v1` (spec 4.2 to 4.4, contract 3), as a route table.

Each handler makes the call's command from the body or the query string (one decoder,
`decoding.py`), calls the use case acting for the key's studio or person, and makes the
specification's body from the value it returns (`wire.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters_http import wire
from adapters_http.bodies import bearer, read_bytes, read_json
from adapters_http.decoding import from_query, structure
from adapters_http.responses import JSONResponse, file_response
from licore import commands as c
from licore import scopes as sc
from licore.actors import ActingPerson, ActingStudio
from licore.errors import InvalidRequest, InvalidToken
from licore.events import MessageKind
from licore.licenses import LicenseEvent
from licore.model import ApiKey
from licore.ports import Clock
from licore.services import limits
from licore.services.device import DeviceFlow
from licore.services.wiring import UseCases
from licore.storage_ports import Storage

Handler = Callable[[UseCases, ApiKey, Request], Awaitable[dict[str, Any] | Response]]
STUDIO, LIBRARY = sc.KeyKind.STUDIO, sc.KeyKind.LIBRARY


@attrs.frozen
class Endpoint:
    method: str
    path: str
    scope: str
    handler: Handler

    @property
    def kind(self) -> sc.KeyKind:
        return sc.SCOPES[self.scope][0]


def studio_of(key: ApiKey) -> ActingStudio:
    assert key.studio_id is not None  # a studio key; the endpoint's scope made sure
    return ActingStudio(key.studio_id)


def person_of(key: ApiKey) -> ActingPerson:
    return ActingPerson(key.account_id)


# products ---------------------------------------------------------------------------------


async def list_products(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = from_query(request.query_params, c.ListProducts)
    page = await uc.products.list(studio_of(key), command)
    return wire.listing("products", page, wire.product, command.page.limit)


async def save_product(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    """A create without `id`, a change with it (spec 4.2)."""
    body = await read_json(request)
    if isinstance(body, dict) and "id" in body:
        changed = await uc.products.change(studio_of(key), structure(body, c.ChangeProduct))
        return wire.saved_product(changed)
    created = await uc.products.create(studio_of(key), structure(body, c.CreateProduct))
    return wire.saved_product(created)


# licenses ---------------------------------------------------------------------------------


async def list_licenses(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = from_query(request.query_params, c.ListLicenses)
    page = await uc.licensing.list(studio_of(key), command)
    return wire.listing("licenses", page, wire.license, command.page.limit)


async def grant(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    target = structure(await read_json(request), c.LicenseTarget)
    license = await uc.licensing.change(studio_of(key), c.ChangeLicense(target,
                                                                        LicenseEvent.GRANT))
    return wire.granted(license)


async def revoke(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    target = from_query(request.query_params, c.LicenseTarget)
    await uc.licensing.change(studio_of(key), c.ChangeLicense(target, LicenseEvent.REVOKE))
    return wire.OK


def by_body(event: LicenseEvent) -> Handler:
    async def change(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
        target = structure(await read_json(request), c.LicenseTarget)
        await uc.licensing.change(studio_of(key), c.ChangeLicense(target, event))
        return wire.OK

    return change


async def alerts(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = from_query(request.query_params, c.ListAlerts)
    page = await uc.licensing.alerts(studio_of(key), command)
    return wire.listing("alerts", page, wire.alert, command.page.limit)


# library ----------------------------------------------------------------------------------


async def library(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    """The person's products, or with `versions=1` one product's versions (spec 4.4)."""
    query = request.query_params
    if query.get("versions") is None:
        command = from_query(query, c.ListLibrary)
        page = await uc.library.list(person_of(key), command)
        return wire.listing("products", page, wire.library_product, command.page.limit)
    if query.get("versions") != "1":
        raise InvalidRequest("versions must be 1", "versions")
    if not query.get("product_id"):
        raise InvalidRequest("product_id is required with versions=1", "product_id")
    asked = from_query(query, c.ListLibraryVersions)
    found = await uc.library.versions(person_of(key), asked)
    return wire.listing("versions", found.page,
                        lambda v: wire.library_version(v, found.product), asked.page.limit)


async def claim(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    """Extension (docs/platform.md): "I bought this", for an app acting for the person."""
    command = structure(await read_json(request), c.ClaimPurchase)
    return wire.claimed(await uc.claims.claim(person_of(key), command))


async def download(uc: UseCases, key: ApiKey, request: Request) -> Response:
    command = from_query(request.query_params, c.DownloadCopy)
    return file_response(await uc.library.download(person_of(key), command))


# packages ---------------------------------------------------------------------------------


async def list_packages(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = from_query(request.query_params, c.ListPackages)
    page = await uc.packages.list(studio_of(key), command)
    return wire.listing("packages", page, lambda p: wire.package(p.product, p.labels),
                        command.page.limit)


async def list_versions(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = from_query(request.query_params, c.ListPackageVersions)
    found = await uc.packages.versions(studio_of(key), command)
    return wire.listing("versions", found.page,
                        lambda v: wire.package_version(v, found.product), command.page.limit)


async def upload(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    """The raw model file is the body; the product and the new label are in the query."""
    command = from_query(request.query_params, c.UploadVersion, data=b"")
    data = await read_bytes(request, uc.packages.max_upload_bytes)
    made = await uc.packages.upload(studio_of(key), attrs.evolve(command, data=data))
    return {"ok": True, "version": wire.package_version(made.version, made.product)}


async def publish(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = structure(await read_json(request), c.PublishVersion)
    done = await uc.packages.publish(studio_of(key), command)
    return wire.published(done.product, done.version)


async def settings(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = structure(await read_json(request), c.ChangeSettings)
    return wire.package_settings(await uc.packages.change_settings(studio_of(key), command))


# events (docs/events.md, an extension) ----------------------------------------------------


async def list_webhooks(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    return {"webhooks": [wire.webhook(e) for e in await uc.webhooks.list(studio_of(key))]}


async def add_webhook(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    shown = await uc.webhooks.add(studio_of(key), structure(await read_json(request),
                                                            c.AddWebhook))
    return wire.webhook_secret(shown.endpoint, shown.secret)


async def remove_webhook(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    await uc.webhooks.remove(studio_of(key), from_query(request.query_params, c.WebhookTarget))
    return wire.OK


async def rotate_webhook(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    shown = await uc.webhooks.rotate(studio_of(key), structure(await read_json(request),
                                                               c.WebhookTarget))
    return wire.webhook_secret(shown.endpoint, shown.secret)


async def enable_webhook(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    done = await uc.webhooks.enable(studio_of(key), structure(await read_json(request),
                                                              c.WebhookTarget))
    return {"ok": True, **wire.webhook(done)}


def log_of(kind: MessageKind, name: str) -> Handler:
    async def listing(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
        command = from_query(request.query_params, c.ListDeliveries)
        page = await uc.webhooks.deliveries(studio_of(key), kind, command)
        return wire.listing(name, page, wire.delivery, command.page.limit)

    return listing


async def resend(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    again = await uc.webhooks.resend(studio_of(key), structure(await read_json(request),
                                                               c.WebhookTarget))
    return {"ok": True, **wire.delivery(again)}


async def chat_roles(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    target = from_query(request.query_params, c.ChatRolesOf)
    roles = await uc.webhooks.roles(studio_of(key), target.product_id)
    return {"product_id": target.product_id, "roles": [wire.chat_role(r) for r in roles]}


async def set_chat_roles(uc: UseCases, key: ApiKey, request: Request) -> dict[str, Any]:
    command = structure(await read_json(request), c.SetChatRoles)
    roles = await uc.webhooks.set_roles(studio_of(key), command)
    return {"ok": True, "product_id": command.product_id,
            "roles": [wire.chat_role(r) for r in roles]}


ENDPOINTS: list[Endpoint] = [
    Endpoint("GET", "/products", "products:read", list_products),
    Endpoint("POST", "/products", "products:write", save_product),
    Endpoint("GET", "/licenses", "licenses:read", list_licenses),
    Endpoint("POST", "/licenses", "licenses:write", grant),
    Endpoint("DELETE", "/licenses", "licenses:write", revoke),
    Endpoint("POST", "/licenses/pause", "licenses:write", by_body(LicenseEvent.PAUSE)),
    Endpoint("POST", "/licenses/resume", "licenses:write", by_body(LicenseEvent.RESUME)),
    Endpoint("GET", "/alerts", "licenses:read", alerts),
    Endpoint("GET", "/library", "library:read", library),
    Endpoint("GET", "/packages", "packages:read", list_packages),
    Endpoint("POST", "/packages/settings", "packages:write", settings),
    Endpoint("GET", "/packages/versions", "packages:read", list_versions),
    Endpoint("POST", "/packages/versions", "packages:write", upload),
    Endpoint("POST", "/packages/publish", "packages:write", publish),
    Endpoint("GET", "/library/download", "library:download", download),
    # Claiming adds only what the platform says the person already bought, so the person's
    # read scope covers it (docs/platform.md): no new scope in the specification's table.
    Endpoint("POST", "/library/claim", "library:read", claim),
    Endpoint("GET", "/webhooks", "licenses:read", list_webhooks),
    Endpoint("POST", "/webhooks", "licenses:write", add_webhook),
    Endpoint("DELETE", "/webhooks", "licenses:write", remove_webhook),
    Endpoint("POST", "/webhooks/rotate", "licenses:write", rotate_webhook),
    Endpoint("POST", "/webhooks/enable", "licenses:write", enable_webhook),
    Endpoint("GET", "/webhooks/deliveries", "licenses:read",
             log_of(MessageKind.WEBHOOK, "deliveries")),
    Endpoint("POST", "/webhooks/resend", "licenses:write", resend),
    Endpoint("GET", "/chat-roles", "products:read", chat_roles),
    Endpoint("POST", "/chat-roles", "products:write", set_chat_roles),
    Endpoint("GET", "/chat-roles/hand-outs", "licenses:read",
             log_of(MessageKind.CHAT_ROLE, "hand_outs")),
]


@attrs.frozen
class Authenticate:
    """Bearer key, then the per-key rate limit; the key id is kept for the access log and
    what is left of the limit for the answer's headers."""

    flow: DeviceFlow
    storage: Storage
    clock: Clock
    rate_limit: int  # a key, a minute

    async def __call__(self, request: Request) -> ApiKey:
        plain, sent = bearer(request)
        request.state.credentials_sent = sent
        if plain is None:
            raise InvalidToken("this call needs Authorization: Bearer <API_KEY>")
        key = await self.flow.authenticate(plain)
        request.state.key_id = key.id
        request.state.quota = await limits.hit(self.storage, self.clock, f"key:{key.id}",
                                               self.rate_limit)
        return key


def quota_headers(quota: limits.Quota) -> dict[str, str]:
    """The IETF draft's names (RateLimit-*), which API clients and gateways read."""
    return {"RateLimit-Limit": str(quota.limit), "RateLimit-Remaining": str(quota.remaining),
            "RateLimit-Reset": str(quota.reset)}


def routes(authenticate: Authenticate, uc: UseCases,
           endpoints: list[Endpoint] = ENDPOINTS) -> list[Route]:
    by_path: dict[str, dict[str, Endpoint]] = {}
    for e in endpoints:
        by_path.setdefault(e.path, {})[e.method] = e

    def make(methods: dict[str, Endpoint]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            e = methods["GET" if request.method == "HEAD" else request.method]
            key = await authenticate(request)
            sc.require(frozenset(key.scopes), key.kind, e.kind, e.scope)
            answer = await e.handler(uc, key, request)
            response = answer if isinstance(answer, Response) else JSONResponse(answer)
            response.headers.update(quota_headers(request.state.quota))
            return response

        return endpoint

    return [Route(path, make(methods), methods=list(methods)) for path, methods in by_path.items()]
