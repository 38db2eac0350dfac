"""A person's own pages (their library, the apps acting for them) and the storefront."""

from __future__ import annotations

import hmac
import secrets
from datetime import UTC, datetime

import attrs
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from adapters_http import site
from adapters_http.decoding import from_query
from adapters_http.responses import file_response
from adapters_http.web import session
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, Page, page_routes, redirect
from adapters_http.wire import IMAGES_PATH
from licore.actors import ActingPerson
from licore.commands import BrowseStore, ClaimPurchase, DownloadCopy, FollowChannel
from licore.errors import InvalidRequest
from licore.license_commands import RekeyOwn, TakeTrial
from licore.services.settings import Settings
from licore.services.wiring import UseCases

# Where the platform shows a place and a game pass to buyers (its public web addresses).
PLACE_URL = "https://www.roblox.com/games/{}"
PASS_URL = "https://www.roblox.com/game-pass/{}"


@attrs.frozen
class PersonSite:
    """What these pages are given: the use cases, and the settings (the site's address)."""

    uc: UseCases
    settings: Settings


async def library(s: PersonSite, ctx: Ctx) -> Response:
    shelves = await s.uc.people.shelves(ctx.account)
    return page(ctx.request, ctx.visitor, "library.html", shelves=shelves,
                chat_user=await s.uc.people.chat_user(ctx.account),
                chat_enabled=s.uc.people.chat_enabled)


async def download(s: PersonSite, ctx: Ctx) -> Response:
    """The live build, or with `?version_id=` an older one the library lists."""
    version_id = ctx.request.query_params.get("version_id") or None
    return file_response(await s.uc.people.download(
        ctx.account, DownloadCopy(ctx.param("product_id"), version_id)))


async def channel(s: PersonSite, ctx: Ctx) -> Response:
    """The beta opt-in of one product: `beta` to get beta builds, `stable` to leave."""
    held = await s.uc.people.follow(ctx.account, FollowChannel(ctx.param("product_id"),
                                                               ctx.field("channel")))
    session.flash(ctx.request, "You get beta builds of this product now." if
                  held.channel.value == "beta" else
                  "You are back on stable builds of this product.")
    return redirect(ctx.request, "/library")


async def rekey(s: PersonSite, ctx: Ctx) -> Response:
    """"New key": the holder's own key replaced (a leaked key stops working at once)."""
    await s.uc.lifecycle.rekey_own(ActingPerson(ctx.account.id),
                                   RekeyOwn(ctx.param("product_id")))
    session.flash(ctx.request, "New key made: copies you downloaded before stop working "
                  "now. Download the product again to get copies with the new key.")
    return redirect(ctx.request, "/library")


async def apps(s: PersonSite, ctx: Ctx) -> Response:
    connected = await s.uc.people.own_apps(ctx.account)
    return page(ctx.request, ctx.visitor, "apps.html", apps=connected)


async def revoke_app(s: PersonSite, ctx: Ctx) -> Response:
    await s.uc.people.revoke_own_app(ctx.account, ctx.param("key_id"))
    session.flash(ctx.request, "App disconnected: its key stops working now.")
    return redirect(ctx.request, "/apps")


def callback(s: PersonSite, ctx: Ctx) -> str:
    return site.absolute(ctx.request.scope, s.settings.public_url, "/chat/callback")


async def chat_link(s: PersonSite, ctx: Ctx) -> Response:
    """Off to the chat service's sign-in (OAuth 2.0, scope `identify`); the state ties
    the answer to this session so another site cannot link its account to ours."""
    state = secrets.token_urlsafe(24)
    url = s.uc.people.chat_sign_in_url(state, callback(s, ctx))
    ctx.request.session["chat_state"] = state
    return RedirectResponse(url, status_code=303)


async def chat_callback(s: PersonSite, ctx: Ctx) -> Response:
    expected = ctx.request.session.pop("chat_state", None)
    given = ctx.request.query_params.get("state", "")
    code = ctx.request.query_params.get("code", "")
    if (not s.uc.people.chat_enabled or not expected or not code
            or not hmac.compare_digest(str(expected), given)):
        raise InvalidRequest("the chat sign-in did not come back from this page; "
                             "start again")
    if not await s.uc.people.link_chat_code(ctx.account, code, callback(s, ctx)):
        raise InvalidRequest("the chat service did not confirm the account; start again")
    session.flash(ctx.request, "Chat account linked: the roles your products earn are "
                  "on their way.")
    return redirect(ctx.request, "/library")


async def chat_unlink(s: PersonSite, ctx: Ctx) -> Response:
    await s.uc.people.link_chat(ctx.account, None)
    session.flash(ctx.request, "Chat account unlinked.")
    return redirect(ctx.request, "/library")


async def store(s: PersonSite, ctx: Ctx) -> Response:
    asked = from_query(ctx.request.query_params, BrowseStore)
    listed = await s.uc.people.storefront(asked)
    covers = await s.uc.images.covers([product.id for product, _ in listed])
    return page(ctx.request, ctx.visitor, "store.html", listed=listed, asked=asked,
                covers=covers, images_path=IMAGES_PATH)


async def store_product(s: PersonSite, ctx: Ctx) -> Response:
    shown = await s.uc.people.store_page(ctx.param("product_id"), ctx.visitor.account)
    return page(ctx.request, ctx.visitor, "store_product.html", shown=shown,
                place_url=PLACE_URL, pass_url=PASS_URL, images_path=IMAGES_PATH,
                images=await s.uc.images.shown(shown.product.id))


async def trial(s: PersonSite, ctx: Ctx) -> Response:
    """"Try it": the person's own trial, once per person and product, ever."""
    taken = await s.uc.lifecycle.take_trial(ActingPerson(ctx.account.id),
                                            TakeTrial(ctx.param("product_id")))
    until = datetime.fromtimestamp(taken.expires_at or 0, UTC).strftime("%Y-%m-%d")
    session.flash(ctx.request, f"Trial started: the product is in your library until "
                  f"{until}.")
    return redirect(ctx.request, "/library")


async def claim(s: PersonSite, ctx: Ctx) -> Response:
    """"I bought this": the platform is asked; the page says what came of it."""
    done = await s.uc.claims.claim(ActingPerson(ctx.account.id),
                                   ClaimPurchase(ctx.param("product_id")))
    return page(ctx.request, ctx.visitor, "claim.html", claim=done,
                result=done.result.value)


PAGES: list[Page[PersonSite]] = [
    Page("GET", "/library", library),
    Page("GET", "/library/{product_id}/download", download),
    Page("POST", "/library/{product_id}/channel", channel),
    Page("POST", "/library/{product_id}/rekey", rekey),
    Page("GET", "/apps", apps),
    Page("POST", "/apps/{key_id}/revoke", revoke_app),
    Page("GET", "/store", store, signed_in=False),
    Page("GET", "/store/{product_id}", store_product, signed_in=False),
    Page("POST", "/store/{product_id}/claim", claim),
    Page("POST", "/store/{product_id}/trial", trial),
    Page("GET", "/chat/link", chat_link),
    Page("GET", "/chat/callback", chat_callback),
    Page("POST", "/chat/unlink", chat_unlink),
]


def routes(uc: UseCases, settings: Settings) -> list[Route]:
    return page_routes(uc.sessions, PersonSite(uc, settings), PAGES)
