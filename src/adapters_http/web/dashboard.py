"""The seller dashboard at `/dashboard`: a studio's products and their settings, license
policy and chat roles, licenses and their lifecycle (transfer, renew, re-key, tier, places),
blacklist, alerts and the actions on them, connected apps, and webhook endpoints with their
deliveries. Every action is checked in the core against the
person's permission in the studio; a person outside it gets 404 on all of its pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.responses import Response
from starlette.routing import Route

from adapters_http.decoding import parse_json
from adapters_http.web import session
from adapters_http.web.audit_page import audit_page
from adapters_http.web.render import page, when
from adapters_http.web.routing import Ctx, Page, page_routes, redirect
from adapters_http.web.usage_pages import (
    product_usage,
    product_usage_csv,
    studio_usage,
    studio_usage_csv,
)
from adapters_http.wire import IMAGES_PATH
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
    WithdrawVersion,
)
from licore.errors import InvalidRequest
from licore.events import TOPICS
from licore.images import MAX_IMAGE_BYTES, MAX_IMAGES, AddImage, DescribeImage, RemoveImage
from licore.license_commands import (
    MAX_TIERS,
    GrantLicense,
    RenewLicense,
    SetLicensePolicy,
    SetTier,
    Terms,
    TierSpec,
    TransferLicense,
)
from licore.licenses import LicenseEvent, PlacePolicy
from licore.protection import ProtectionProblem
from licore.scopes import Permission
from licore.services.dashboard import AlertAction, Dashboard, Seat
from licore.services.settings import Settings
from licore.services.webhooks import ROTATION_OVERLAP, Shown
from licore.services.wiring import UseCases


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
                events=await board.events(here), topics=TOPICS,
                acted=session.pop_row_mark(ctx.request))


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
                detail=detail, Permission=Permission, PlacePolicy=PlacePolicy,
                max_tiers=MAX_TIERS, images_path=IMAGES_PATH, max_images=MAX_IMAGES)


async def save_product(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    await board.change_product(here, ChangeProduct(
        id=ctx.param("product_id"), **_product_fields(ctx),
        discoverable=ctx.field("discoverable") == "on"))
    session.flash(ctx.request, "Product saved.")
    return redirect(ctx.request, studio_url(here, f"/products/{ctx.param('product_id')}"))


async def save_settings(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    saved = await board.change_settings(here, ChangeSettings(
        product_id=ctx.param("product_id"), placeholder=ctx.field("placeholder"),
        verify_scripts=ctx.field("verify_scripts") == "on",
        unlock_data=_json_field(ctx, "unlock_data"),
        protection=_json_field(ctx, "protection"),
        purchase_pass_id=NumberOrText(ctx.field("purchase_pass_id").strip()),
        hub_place_id=NumberOrText(ctx.field("hub_place_id").strip())))
    session.flash(ctx.request, "Settings saved." + _protection_notes(saved.notes))
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


async def add_image(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    # The file's bytes decide its format; the browser's idea of its type is not asked.
    await board.add_image(here, AddImage(product_id, ctx.upload or b"", ctx.field("alt")))
    session.flash(ctx.request, "Image added.")
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#images"))


async def image_action(board: Dashboard, ctx: Ctx) -> Response:
    """Remove, move one place earlier or later, or change the alt text."""
    here = await seat(board, ctx)
    target = RemoveImage(ctx.param("product_id"), ctx.param("image_id"))
    action = ctx.field("action")
    if action == "remove":
        await board.remove_image(here, target)
        session.flash(ctx.request, "Image removed.")
    elif action in IMAGE_MOVES:
        await board.move_image(here, target, IMAGE_MOVES[action])
    elif action == "describe":
        await board.describe_image(here, DescribeImage(target.product_id, target.id,
                                                       ctx.field("alt")))
        session.flash(ctx.request, "Alt text saved.")
    else:
        raise InvalidRequest("action must be remove, earlier, later or describe", "action")
    return redirect(ctx.request, studio_url(here, f"/products/{target.product_id}#images"))


IMAGE_MOVES = {"earlier": -1, "later": 1}


async def publish(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    channel = ctx.field("channel") or "stable"
    done = await board.publish(here, PublishVersion(product_id, ctx.field("version_id"),
                                                    channel))
    session.flash(ctx.request, (f"Version {done.version.label} is live." if channel == "stable"
                                else f"Version {done.version.label} is the beta build.")
                  + _protection_notes(done.notes))
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#versions"))


_NOTES_SHOWN = 3  # a flash travels in the session cookie, which has room for a few


def _protection_notes(notes: Sequence[ProtectionProblem]) -> str:
    """What the protector works around in a build (the `notes` of the API's publish and
    settings answers), the first few."""
    if not notes:
        return ""
    shown = "; ".join(f"{n.path}{f' line {n.line}' if n.line else ''}: {n.message}"
                      for n in notes[:_NOTES_SHOWN])
    more = len(notes) - _NOTES_SHOWN
    return f" Protection notes: {shown}" + (f"; and {more} more." if more > 0 else ".")


async def withdraw(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    done = await board.withdraw(here, WithdrawVersion(product_id, ctx.field("version_id")))
    live = done.product.current_version
    session.flash(ctx.request, f"Version {done.version.label} withdrawn. "
                  + (f"Live version: {live}." if live else "No version is live now."))
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


def _whole(ctx: Ctx, name: str) -> int | None:
    """A whole-number field; empty is "not given". Its range is the command's to check."""
    text = ctx.field(name).strip()
    if not text:
        return None
    if not text.isdigit() or len(text) > 12:
        raise InvalidRequest(f"{name.replace('_', ' ')} must be a whole number", name)
    return int(text)


def _date(ctx: Ctx, name: str) -> int | None:
    """A date field (YYYY-MM-DD) as the unix time of 00:00 UTC that day."""
    text = ctx.field(name).strip()
    if not text:
        return None
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidRequest(f"{name} must be a date, as 2027-01-31", name) from None
    return int(day.timestamp())


def _tier(ctx: Ctx) -> str | None:
    return ctx.field("tier").strip() or None  # empty: the product's own unlock data


LicenseDo = Callable[[Dashboard, Seat, Ctx, LicenseTarget], Awaitable[str]]


def _changes(event: LicenseEvent, done: str) -> LicenseDo:
    async def run(board: Dashboard, here: Seat, ctx: Ctx, target: LicenseTarget) -> str:
        await board.change_license(here, ChangeLicense(target, event))
        return f"License for {target.user} {done}."

    return run


async def _grant(board: Dashboard, here: Seat, ctx: Ctx, target: LicenseTarget) -> str:
    granted = await board.grant(here, GrantLicense(
        target, Terms(duration_days=_whole(ctx, "days")), _tier(ctx)))
    ends = f", until {when(granted.expires_at)}" if granted.expires_at is not None else ""
    return f"License for {target.user} granted{ends}."


async def _transfer(board: Dashboard, here: Seat, ctx: Ctx, target: LicenseTarget) -> str:
    to_user = ctx.field("to_user").strip()
    moved = await board.transfer(here, TransferLicense(target.product_id, target.user,
                                                       to_user))
    return (f"License moved from {moved.old.platform_id} to {moved.new.platform_id}: "
            f"the new holder has a new key; {moved.old.platform_id}'s key stops working now.")


async def _renew(board: Dashboard, here: Seat, ctx: Ctx, target: LicenseTarget) -> str:
    days, until = _whole(ctx, "days"), _date(ctx, "until")
    if (days is None) == (until is None):
        raise InvalidRequest("give a number of days or a date to renew to, not both", "days")
    renewed = await board.renew(here, RenewLicense(target, Terms(until, days)))
    return f"License for {target.user} renewed: it ends {when(renewed.expires_at)}."


async def _rekey(board: Dashboard, here: Seat, ctx: Ctx, target: LicenseTarget) -> str:
    await board.rekey(here, target)
    return (f"License for {target.user} re-keyed: the old key and copies made with it stop "
            "working now; new downloads carry the new key.")


async def _set_tier(board: Dashboard, here: Seat, ctx: Ctx, target: LicenseTarget) -> str:
    changed = await board.set_tier(here, SetTier(target, _tier(ctx)))
    on = f"tier {changed.tier}" if changed.tier else "the product's own unlock data"
    return f"License for {target.user} is on {on}."


async def _reset_places(board: Dashboard, here: Seat, ctx: Ctx,
                        target: LicenseTarget) -> str:
    forgotten = await board.reset_places(here, target)
    return (f"Places of {target.user}'s license reset ({forgotten} forgotten): the next "
            "places it is used from count from 1.")


# The license form: one handler, the action naming which use case it runs.
LICENSE_DO: dict[str, LicenseDo] = {
    "grant": _grant,
    "revoke": _changes(LicenseEvent.REVOKE, "revoked"),
    "pause": _changes(LicenseEvent.PAUSE, "paused"),
    "resume": _changes(LicenseEvent.RESUME, "resumed"),
    "rekey": _rekey,
    "transfer": _transfer,
    "renew": _renew,
    "tier": _set_tier,
    "reset_places": _reset_places,
}


def license_url(here: Seat, product_id: str, user: str) -> str:
    return studio_url(here, f"/products/{product_id}/licenses/{quote(user, safe='')}")


async def license_action(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    action = LICENSE_DO.get(ctx.field("action"))
    if action is None:
        raise InvalidRequest("unknown license action", "action")
    product_id, user = ctx.param("product_id"), ctx.field("user").strip()
    target = LicenseTarget(product_id, user)
    session.flash(ctx.request, await action(board, here, ctx, target))
    # Back to the license's own page when the form was there (a transfer leaves it behind).
    if ctx.field("back") == "license" and ctx.field("action") != "transfer":
        return redirect(ctx.request, license_url(here, product_id, user))
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#licenses"))


async def license_page(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    target = LicenseTarget(ctx.param("product_id"), ctx.param("user"))
    detail = await board.license_detail(here, target)
    return page(ctx.request, ctx.visitor, "dashboard_license.html", seat=here,
                detail=detail, Permission=Permission)


def _tiers(ctx: Ctx) -> tuple[TierSpec, ...]:
    """The tier rows of the policy form; a row whose name is cleared is removed."""
    tiers = []
    for i in range(MAX_TIERS + 1):
        name, data = ctx.field(f"tier_name_{i}").strip(), ctx.field(f"tier_data_{i}").strip()
        if name:
            tiers.append(TierSpec(name, _json_field(ctx, f"tier_data_{i}") if data
                                  else JsonValue({})))
        elif data:
            raise InvalidRequest("give each tier with unlock data a name", f"tier_name_{i}")
    return tuple(tiers)


def _place_policy(ctx: Ctx) -> PlacePolicy:
    try:
        return PlacePolicy(ctx.field("place_policy"))
    except ValueError:
        raise InvalidRequest("place policy must be alert or enforce", "place_policy") from None


async def save_policy(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    product_id = ctx.param("product_id")
    await board.set_policy(here, SetLicensePolicy(
        product_id, place_limit=_whole(ctx, "place_limit"), place_policy=_place_policy(ctx),
        trial_days=_whole(ctx, "trial_days") or 0, tiers=_tiers(ctx),
        grace_days=_whole(ctx, "grace_days") or 0))
    session.flash(ctx.request, "License policy saved.")
    return redirect(ctx.request, studio_url(here, f"/products/{product_id}#policy"))


ALERT_DONE = {AlertAction.REVOKE: "License of {} revoked",
              AlertAction.PAUSE: "License of {} paused",
              AlertAction.REKEY: "License of {} re-keyed: the old key stops working now",
              AlertAction.BLACKLIST: "User {} blacklisted"}


async def alert_action(board: Dashboard, ctx: Ctx) -> Response:
    here = await seat(board, ctx)
    try:
        action = AlertAction(ctx.field("action"))
    except ValueError:
        raise InvalidRequest("unknown alert action", "action") from None
    acted = await board.act_on_alert(here, ctx.param("alert_id"), action)
    done = ALERT_DONE[action].format(acted.subject)
    session.flash(ctx.request, f"{done}.")
    session.mark_row(ctx.request, acted.alert.id, done)
    return redirect(ctx.request, studio_url(here, f"#alert-{acted.alert.id}"))


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


IMAGE_FORM_LIMIT = MAX_IMAGE_BYTES + 64 * 1024  # room for the form around the file
BASE = "/{studio_id}"
PRODUCT = BASE + "/products/{product_id}"
PAGES: list[Page[Dashboard]] = [
    Page("GET", "", studios),
    Page("GET", BASE, studio),
    Page("POST", BASE + "/products", create_product),
    Page("POST", BASE + "/deliveries/{message_id}/resend", resend),
    Page("POST", BASE + "/webhooks", add_webhook),
    Page("POST", BASE + "/webhooks/{endpoint_id}/rotate", rotate_webhook),
    Page("POST", BASE + "/webhooks/{endpoint_id}/delete", remove_webhook),
    Page("POST", BASE + "/webhooks/{endpoint_id}/enable", enable_webhook),
    Page("GET", PRODUCT, product),
    Page("POST", PRODUCT, save_product),
    Page("POST", PRODUCT + "/settings", save_settings),
    Page("POST", PRODUCT + "/versions", upload, upload=True),
    Page("POST", PRODUCT + "/publish", publish),
    Page("POST", PRODUCT + "/images", add_image, upload_limit=IMAGE_FORM_LIMIT),
    Page("POST", PRODUCT + "/images/{image_id}", image_action),
    Page("POST", PRODUCT + "/withdraw", withdraw),
    Page("POST", PRODUCT + "/trace", trace, upload=True),
    Page("POST", PRODUCT + "/policy", save_policy),
    Page("POST", PRODUCT + "/licenses", license_action),
    Page("GET", PRODUCT + "/licenses/{user}", license_page),
    Page("POST", PRODUCT + "/chat-roles", chat_role),
    Page("POST", BASE + "/blacklist", blacklist),
    Page("POST", BASE + "/alerts/{alert_id}", alert_action),
    Page("POST", BASE + "/apps/{key_id}/revoke", revoke_app),
    Page("GET", BASE + "/usage", studio_usage),
    Page("GET", PRODUCT + "/usage", product_usage),
    Page("GET", BASE + "/usage.csv", studio_usage_csv),
    Page("GET", PRODUCT + "/usage.csv", product_usage_csv),
    Page("GET", BASE + "/audit", audit_page),
]


def routes(uc: UseCases, settings: Settings) -> list[Route]:
    # room for the form around the file
    upload_limit = settings.max_upload_bytes + 64 * 1024
    return page_routes(uc.sessions, uc.dashboard, PAGES, prefix="/dashboard",
                       upload_limit=upload_limit)
