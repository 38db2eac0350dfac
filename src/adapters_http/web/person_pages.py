"""A person's own pages (their library, the apps acting for them) and the storefront."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from adapters_http.responses import file_response
from adapters_http.web import session
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, page_route, redirect
from licore.actors import ActingPerson
from licore.commands import ClaimPurchase, DownloadCopy
from licore.services.deps import Deps
from licore.services.wiring import UseCases


def routes(deps: Deps, uc: UseCases) -> list[Route]:
    people = uc.people

    async def library(ctx: Ctx) -> Response:
        owned = await people.owned(ctx.account)
        return page(ctx.request, ctx.visitor, "library.html", owned=owned)

    async def download(ctx: Ctx) -> Response:
        return file_response(await people.download(
            ctx.account, DownloadCopy(ctx.param("product_id"))))

    async def apps(ctx: Ctx) -> Response:
        connected = await people.own_apps(ctx.account)
        return page(ctx.request, ctx.visitor, "apps.html", apps=connected)

    async def revoke_app(ctx: Ctx) -> Response:
        await people.revoke_own_app(ctx.account, ctx.param("key_id"))
        session.flash(ctx.request, "App disconnected: its key stops working now.")
        return redirect("/apps")

    async def store(ctx: Ctx) -> Response:
        listed = await people.storefront()
        return page(ctx.request, ctx.visitor, "store.html", listed=listed)

    async def claim(ctx: Ctx) -> Response:
        """"I bought this": the platform is asked; the page says what came of it."""
        done = await uc.claims.claim(ActingPerson(ctx.account.id),
                                     ClaimPurchase(ctx.param("product_id")))
        return page(ctx.request, ctx.visitor, "claim.html", claim=done,
                    result=done.result.value)

    return [
        page_route(deps, "/library", library),
        page_route(deps, "/library/{product_id}/download", download),
        page_route(deps, "/apps", apps),
        page_route(deps, "/apps/{key_id}/revoke", revoke_app, method="POST"),
        page_route(deps, "/store", store, signed_in=False),
        page_route(deps, "/store/{product_id}/claim", claim, method="POST"),
    ]
