"""The home page, sign-in and sign-out."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from adapters_http.web import session
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, page_route, redirect, safe_next
from licore.ports import SignIn
from licore.services import signin
from licore.services.deps import Deps


def routes(deps: Deps, method: SignIn) -> list[Route]:
    async def home(ctx: Ctx) -> Response:
        return page(ctx.request, ctx.visitor, "home.html")

    async def signin_form(ctx: Ctx) -> Response:
        target = safe_next(ctx.request.query_params.get("next", "/"))
        if ctx.visitor.account is not None:
            return redirect(target)
        return page(ctx.request, ctx.visitor, "signin.html", next=target, username="",
                    error=None)

    async def signin_post(ctx: Ctx) -> Response:
        target = safe_next(ctx.field("next") or "/")
        fields = {"username": ctx.field("username"), "password": ctx.field("password")}
        try:
            account = await signin.sign_in(deps.storage, deps.clock, method, fields, ctx.ip)
        except (signin.SignInRefused, signin.SignInLocked) as refused:
            headers = ({"Retry-After": str(refused.retry_after)}
                       if isinstance(refused, signin.SignInLocked) else None)
            return page(ctx.request, ctx.visitor, "signin.html", status=refused.status,
                        headers=headers, next=target, username=fields["username"][:64],
                        error=refused.description)
        session.start(ctx.request, account, deps.clock.now())
        session.flash(ctx.request, f"Signed in as {account.username}.")
        return redirect(target)

    async def signout(ctx: Ctx) -> Response:
        if ctx.visitor.session_id is not None:
            await signin.end_session(deps.storage, ctx.visitor.session_id)
        session.session(ctx.request).clear()
        session.flash(ctx.request, "Signed out.")
        return redirect("/")

    return [
        page_route(deps, "/", home, signed_in=False),
        page_route(deps, "/signin", signin_form, signed_in=False),
        page_route(deps, "/signin", signin_post, method="POST", signed_in=False),
        page_route(deps, "/signout", signout, method="POST", signed_in=False),
    ]
