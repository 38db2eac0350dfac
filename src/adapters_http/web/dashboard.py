"""The seller dashboard at `/dashboard`: a studio's products and their settings and chat
roles, licenses, blacklist, alerts, connected apps, and webhook endpoints with their
deliveries. Every action is checked in the core against the
person's permission in the studio; a person outside it gets 404 on all of its pages."""

from __future__ import annotations

from typing import Any

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
from licore.services.dashboard import Seat
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


def routes(uc: UseCases, settings: Settings) -> list[Route]:
    sessions = uc.sessions
    board = uc.dashboard

    async def seat(ctx: Ctx) -> Seat:
        return await board.take_seat(ctx.account.id, ctx.param("studio_id"))

    def studio_url(seat: Seat, tail: str = "") -> str:
        return f"/dashboard/{seat.studio.id}{tail}"

    async def studios(ctx: Ctx) -> Response:
        seats = await board.seats_of(ctx.account.id)
        return page(ctx.request, ctx.visitor, "dashboard_studios.html", seats=seats)

    async def studio(ctx: Ctx) -> Response:
        here = await seat(ctx)
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

    async def add_webhook(ctx: Ctx) -> Response:
        here = await seat(ctx)
        wanted = tuple(t for t in TOPICS if ctx.field(f"event:{t}") == "on")
        shown = await board.add_webhook(here, AddWebhook(ctx.field("url").strip(), wanted))
        return shown_secret(ctx, here, shown, "added")

    async def rotate_webhook(ctx: Ctx) -> Response:
        here = await seat(ctx)
        return shown_secret(ctx, here, await board.rotate_webhook(here, endpoint_of(ctx)),
                            "rotated")

    async def remove_webhook(ctx: Ctx) -> Response:
        here = await seat(ctx)
        await board.remove_webhook(here, endpoint_of(ctx))
        session.flash(ctx.request, "Webhook endpoint deleted.")
        return redirect(studio_url(here, "#events"))

    async def enable_webhook(ctx: Ctx) -> Response:
        here = await seat(ctx)
        await board.enable_webhook(here, endpoint_of(ctx))
        session.flash(ctx.request, "Webhook endpoint enabled again.")
        return redirect(studio_url(here, "#events"))

    async def resend(ctx: Ctx) -> Response:
        here = await seat(ctx)
        await board.resend(here, WebhookTarget(ctx.param("message_id")))
        session.flash(ctx.request, "Queued to be sent again, with the same id.")
        return redirect(studio_url(here, "#events"))

    async def chat_role(ctx: Ctx) -> Response:
        here = await seat(ctx)
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
        return redirect(studio_url(here, f"/products/{product_id}#chat-roles"))

    async def create_product(ctx: Ctx) -> Response:
        here = await seat(ctx)
        created = await board.create_product(here, CreateProduct(**_product_fields(ctx)))
        session.flash(ctx.request, "Product created as a draft.")
        return redirect(studio_url(here, f"/products/{created.id}"))

    async def product(ctx: Ctx) -> Response:
        here = await seat(ctx)
        detail = await board.product_detail(here, ctx.param("product_id"))
        return page(ctx.request, ctx.visitor, "dashboard_product.html", seat=here,
                    detail=detail, Permission=Permission)

    async def save_product(ctx: Ctx) -> Response:
        here = await seat(ctx)
        await board.change_product(here, ChangeProduct(
            id=ctx.param("product_id"), **_product_fields(ctx),
            discoverable=ctx.field("discoverable") == "on"))
        session.flash(ctx.request, "Product saved.")
        return redirect(studio_url(here, f"/products/{ctx.param('product_id')}"))

    async def save_settings(ctx: Ctx) -> Response:
        here = await seat(ctx)
        await board.change_settings(here, ChangeSettings(
            product_id=ctx.param("product_id"), placeholder=ctx.field("placeholder"),
            verify_scripts=ctx.field("verify_scripts") == "on",
            unlock_data=_json_field(ctx, "unlock_data"),
            protection=_json_field(ctx, "protection"),
            purchase_pass_id=NumberOrText(ctx.field("purchase_pass_id").strip())))
        session.flash(ctx.request, "Settings saved.")
        return redirect(studio_url(here, f"/products/{ctx.param('product_id')}"))

    async def upload(ctx: Ctx) -> Response:
        here = await seat(ctx)
        product_id = ctx.param("product_id")
        if not ctx.upload:
            raise InvalidRequest("choose a model file to upload", "file")
        made = await board.upload_version(here, UploadVersion(
            product_id, ctx.field("version").strip(), ctx.upload))
        session.flash(ctx.request, f"Version {made.version.label} uploaded as a draft; "
                                   "publish it to make it live.")
        return redirect(studio_url(here, f"/products/{product_id}#versions"))

    async def publish(ctx: Ctx) -> Response:
        here = await seat(ctx)
        product_id = ctx.param("product_id")
        done = await board.publish(here, PublishVersion(product_id, ctx.field("version_id")))
        session.flash(ctx.request, f"Version {done.version.label} is live.")
        return redirect(studio_url(here, f"/products/{product_id}#versions"))

    async def trace(ctx: Ctx) -> Response:
        here = await seat(ctx)
        product_id = ctx.param("product_id")
        if not ctx.upload:
            raise InvalidRequest("choose the leaked file to trace", "file")
        name = ctx.upload_name.rsplit("/", 1)[-1] or "leaked file"
        found = await board.trace_leak(here, product_id, name, ctx.upload)
        detail = await board.product_detail(here, product_id)
        return page(ctx.request, ctx.visitor, "dashboard_trace.html", seat=here,
                    product=detail.product, found=found, leaked=name)

    async def license_action(ctx: Ctx) -> Response:
        here = await seat(ctx)
        action = ctx.field("action")
        if action not in LICENSE_ACTIONS:
            raise InvalidRequest("unknown license action", "action")
        product_id, user = ctx.param("product_id"), ctx.field("user").strip()
        await board.change_license(here, ChangeLicense(LicenseTarget(product_id, user),
                                                       LICENSE_ACTIONS[action]))
        session.flash(ctx.request, f"License for {user} {LICENSE_DONE[action]}.")
        return redirect(studio_url(here, f"/products/{product_id}#licenses"))

    async def blacklist(ctx: Ctx) -> Response:
        here = await seat(ctx)
        on = ctx.field("action") != "remove"
        platform_id = ctx.field("platform_id").strip()
        await board.set_blacklisted(here, platform_id, on)
        session.flash(ctx.request, f"User {platform_id} "
                                   f"{'blacklisted' if on else 'taken off the blacklist'}.")
        return redirect(studio_url(here, "#blacklist"))

    async def revoke_app(ctx: Ctx) -> Response:
        here = await seat(ctx)
        await board.revoke_app(here, ctx.param("key_id"))
        session.flash(ctx.request, "App disconnected: its key stops working now.")
        return redirect(studio_url(here, "#apps"))

    base = "/dashboard/{studio_id}"
    product_path = base + "/products/{product_id}"
    return [
        page_route(sessions, "/dashboard", studios),
        page_route(sessions, base, studio),
        page_route(sessions, base + "/products", create_product, method="POST"),
        page_route(sessions, base + "/deliveries/{message_id}/resend", resend, method="POST"),
        page_route(sessions, base + "/webhooks", add_webhook, method="POST"),
        page_route(sessions, base + "/webhooks/{endpoint_id}/rotate", rotate_webhook,
                   method="POST"),
        page_route(sessions, base + "/webhooks/{endpoint_id}/delete", remove_webhook,
                   method="POST"),
        page_route(sessions, base + "/webhooks/{endpoint_id}/enable", enable_webhook,
                   method="POST"),
        page_route(sessions, product_path, product),
        page_route(sessions, product_path, save_product, method="POST"),
        page_route(sessions, product_path + "/settings", save_settings, method="POST"),
        page_route(sessions, product_path + "/versions", upload, method="POST",
                   upload_limit=settings.max_upload_bytes + 64 * 1024),
        page_route(sessions, product_path + "/publish", publish, method="POST"),
        page_route(sessions, product_path + "/trace", trace, method="POST",
                   upload_limit=settings.max_upload_bytes + 64 * 1024),
        page_route(sessions, product_path + "/licenses", license_action, method="POST"),
        page_route(sessions, product_path + "/chat-roles", chat_role, method="POST"),
        page_route(sessions, base + "/blacklist", blacklist, method="POST"),
        page_route(sessions, base + "/apps/{key_id}/revoke", revoke_app, method="POST"),
    ]
