"""The seller dashboard at `/dashboard`: a studio's products and their settings and chat
roles, licenses, blacklist, alerts, connected apps, and webhook endpoints with their
deliveries. Every action is checked in the core against the
person's permission in the studio; a person outside it gets 404 on all of its pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.responses import Response
from starlette.routing import Route

from adapters_http.decoding import parse_json
from adapters_http.web import session
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, page_route, redirect
from licore import bounds
from licore.commands import (
    AddWebhook,
    ChangeLicense,
    ChangeProduct,
    ChangeSettings,
    CreateProduct,
    JsonValue,
    LicenseTarget,
    NumberOrText,
    PublishVersion,
    RoleName,
    UploadVersion,
    WebhookTarget,
)
from licore.errors import InvalidRequest
from licore.events import TOPICS
from licore.licenses import LicenseEvent
from licore.scopes import Permission
from licore.services.dashboard import Dashboard, Seat
from licore.services.settings import Settings
from licore.services.webhooks import ROTATION_OVERLAP, Shown
from licore.services.wiring import UseCases

LICENSE_ACTIONS = {"grant": LicenseEvent.GRANT, "revoke": LicenseEvent.REVOKE,
                   "pause": LicenseEvent.PAUSE, "resume": LicenseEvent.RESUME}
LICENSE_DONE = {"grant": "granted", "revoke": "revoked", "pause": "paused",
                "resume": "resumed"}


def _price(text: str) -> int:
    cleaned = text.strip()
    if not cleaned.isdigit() or len(cleaned) > 8:
        low, high = bounds.PRICE_CREDIT.low, bounds.PRICE_CREDIT.high
        raise InvalidRequest(f"price must be a whole number from {low:,} to {high:,}",
                             "price_credit")
    return int(cleaned)


def _json_field(ctx: Ctx, name: str) -> JsonValue:
    try:
        return JsonValue(parse_json(ctx.field(name)))
    except InvalidRequest:
        raise InvalidRequest(f"{name.replace('_', ' ')} must be JSON", name) from None


def _product_fields(ctx: Ctx) -> dict[str, Any]:
    return {"title": ctx.field("title"), "tagline": ctx.field("tagline"),
            "description": ctx.field("description"),
            "price_credit": _price(ctx.field("price_credit") or "0")}


async def seat(board: Dashboard, ctx: Ctx) -> Seat:
    return await board.take_seat(ctx.account.id, ctx.param("studio_id"))


def studio_url(seat: Seat, tail: str = "") -> str:
    return f"/dashboard/{seat.studio.id}{tail}"


async def studios(board: Dashboard, ctx: Ctx) -> Response:
    seats = await board.seats_of(ctx.account.id)
    return page(ctx.request, ctx.visitor, "dashboard_studios.html", seats=seats)


async def studio(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    seen = await board.overview(here)
    titles = {p.id: p.title for p in seen.products}
    return page(ctx.request, ctx.visitor, "dashboard_studio.html", seat=here,
                overview=seen, titles=titles, Permission=Permission,
                events=await board.events(here), topics=TOPICS)


def endpoint_of(ctx: Ctx) -> WebhookTarget:
    return WebhookTarget(ctx.param("endpoint_id"))


def shown_secret(ctx: Ctx, here: Seat, shown: Shown, done: str) -> Response:
    """The secret in this answer only: never in a redirect, a flash or a log line."""
    return page(ctx.request, ctx.visitor, "dashboard_secret.html", seat=here,
                endpoint=shown.endpoint, secret=shown.secret, done=done,
                overlap_hours=ROTATION_OVERLAP // 3600)


async def add_webhook(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    wanted = tuple(t for t in TOPICS if ctx.field(f"event:{t}") == "on")
    shown = await board.add_webhook(here, AddWebhook(ctx.field("url").strip(), wanted))
    return shown_secret(ctx, here, shown, "added")


async def rotate_webhook(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    return shown_secret(ctx, here, await board.rotate_webhook(here, endpoint_of(ctx)),
                        "rotated")


async def remove_webhook(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.remove_webhook(here, endpoint_of(ctx))
    session.flash(ctx.request, "Webhook endpoint deleted.")
    return redirect(ctx.request, studio_url(here, "#events"))


async def enable_webhook(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.enable_webhook(here, endpoint_of(ctx))
    session.flash(ctx.request, "Webhook endpoint enabled again.")
    return redirect(ctx.request, studio_url(here, "#events"))


async def resend(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.resend(here, WebhookTarget(ctx.param("message_id")))
    session.flash(ctx.request, "Queued to be sent again, with the same id.")
    return redirect(ctx.request, studio_url(here, "#events"))


async def chat_role(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    role = RoleName(ctx.field("guild_id").strip(), ctx.field("role_id").strip())
    if ctx.field("action") == "remove":
        await board.remove_chat_role(here, product_id, role)
        done = "removed; holders lose it"
    else:
        await board.add_chat_role(here, product_id, role)
        done = "added; holders with a linked chat account get it"
    session.flash(ctx.request, f"Chat role {role.role_id} in server {role.guild_id} "
                               f"{done}.")
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#chat-roles"))


async def create_product(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    created = await board.create_product(here, CreateProduct(**_product_fields(ctx)))
    session.flash(ctx.request, "Product created as a draft.")
    return redirect(ctx.request, studio_url(here, f"/products/{created.id}"))


async def product(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    detail = await board.product_detail(here, ctx.param("product_id"))
    return page(ctx.request, ctx.visitor, "dashboard_product.html", seat=here,
                detail=detail, Permission=Permission)


async def save_product(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.change_product(here, ChangeProduct(
        id=ctx.param("product_id"), **_product_fields(ctx),
        discoverable=ctx.field("discoverable") == "on"))
    session.flash(ctx.request, "Product saved.")
    return redirect(ctx.request, studio_url(here, f"/products/{ctx.param('product_id')}"))


async def save_settings(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.change_settings(here, ChangeSettings(
        product_id=ctx.param("product_id"), placeholder=ctx.field("placeholder"),
        verify_scripts=ctx.field("verify_scripts") == "on",
        unlock_data=_json_field(ctx, "unlock_data"),
        protection=_json_field(ctx, "protection"),
        purchase_pass_id=NumberOrText(ctx.field("purchase_pass_id").strip())))
    session.flash(ctx.request, "Settings saved.")
    return redirect(ctx.request, studio_url(here, f"/products/{ctx.param('product_id')}"))


async def upload(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    if not ctx.upload:
        raise InvalidRequest("choose a model file to upload", "file")
    made = await board.upload_version(here, UploadVersion(
        product_id, ctx.field("version").strip(), ctx.upload))
    session.flash(ctx.request, f"Version {made.version.label} uploaded as a draft; "
                               "publish it to make it live.")
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#versions"))


async def publish(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    done = await board.publish(here, PublishVersion(product_id, ctx.field("version_id")))
    session.flash(ctx.request, f"Version {done.version.label} is live.")
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#versions"))


async def trace(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    if not ctx.upload:
        raise InvalidRequest("choose the leaked file to trace", "file")
    name = ctx.upload_name.rsplit("/", 1)[-1] or "leaked file"
    found = await board.trace_leak(here, product_id, name, ctx.upload)
    detail = await board.product_detail(here, product_id)
    return page(ctx.request, ctx.visitor, "dashboard_trace.html", seat=here,
                product=detail.product, found=found, leaked=name)


async def license_action(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    action = ctx.field("action")
    if action not in LICENSE_ACTIONS:
        raise InvalidRequest("unknown license action", "action")
    product_id, user = ctx.param("product_id"), ctx.field("user").strip()
    await board.change_license(here, ChangeLicense(LicenseTarget(product_id, user),
                                                   LICENSE_ACTIONS[action]))
    session.flash(ctx.request, f"License for {user} {LICENSE_DONE[action]}.")
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#licenses"))


async def blacklist(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    on = ctx.field("action") != "remove"
    platform_id = ctx.field("platform_id").strip()
    await board.set_blacklisted(here, platform_id, on)
    session.flash(ctx.request, f"User {platform_id} "
                               f"{'blacklisted' if on else 'taken off the blacklist'}.")
    return redirect(ctx.request, studio_url(here, "#blacklist"))


async def revoke_app(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.revoke_app(here, ctx.param("key_id"))
    session.flash(ctx.request, "App disconnected: its key stops working now.")
    return redirect(ctx.request, studio_url(here, "#apps"))


Handler = Callable[[Dashboard, Ctx], Awaitable[Response]]


@attrs.frozen
class DashboardPage:
    method: str
    path: str  # under /dashboard
    handler: Handler
    upload: bool = False  # takes a model file: the body may be as large as an upload


BASE = "/{studio_id}"
PRODUCT = BASE + "/products/{product_id}"
PAGES = [
    DashboardPage("GET", "", studios),
    DashboardPage("GET", BASE, studio),
    DashboardPage("POST", BASE + "/products", create_product),
    DashboardPage("POST", BASE + "/deliveries/{message_id}/resend", resend),
    DashboardPage("POST", BASE + "/webhooks", add_webhook),
    DashboardPage("POST", BASE + "/webhooks/{endpoint_id}/rotate", rotate_webhook),
    DashboardPage("POST", BASE + "/webhooks/{endpoint_id}/delete", remove_webhook),
    DashboardPage("POST", BASE + "/webhooks/{endpoint_id}/enable", enable_webhook),
    DashboardPage("GET", PRODUCT, product),
    DashboardPage("POST", PRODUCT, save_product),
    DashboardPage("POST", PRODUCT + "/settings", save_settings),
    DashboardPage("POST", PRODUCT + "/versions", upload, upload=True),
    DashboardPage("POST", PRODUCT + "/publish", publish),
    DashboardPage("POST", PRODUCT + "/trace", trace, upload=True),
    DashboardPage("POST", PRODUCT + "/licenses", license_action),
    DashboardPage("POST", PRODUCT + "/chat-roles", chat_role),
    DashboardPage("POST", BASE + "/blacklist", blacklist),
    DashboardPage("POST", BASE + "/apps/{key_id}/revoke", revoke_app),
]


def routes(uc: UseCases, settings: Settings) -> list[Route]:
    board = uc.dashboard
    # room for the form around the file
    upload_limit = settings.max_upload_bytes + 64 * 1024

    def bound(handler: Handler) -> Callable[[Ctx], Awaitable[Response]]:
        async def run(ctx: Ctx) -> Response:
            return await handler(board, ctx)

        return run

    return [page_route(uc.sessions, "/dashboard" + p.path, bound(p.handler), method=p.method,
                       upload_limit=upload_limit if p.upload else None)
            for p in PAGES]
