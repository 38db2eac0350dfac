"""The home page, sign-in and sign-out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.responses import Response
from starlette.routing import Route

from adapters_http import site
from adapters_http.web import session
from adapters_http.web.platform_signin import PlatformSignIn
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, page_route, redirect, safe_next
from licore.model import Account
from licore.ports import SignIn
from licore.services import signin
from licore.services.operator import FIRST_ACCOUNT_COMMAND
from licore.services.settings import Settings
from licore.services.signin import Sessions


class FirstAccount:
    """Whether the install has no account yet, so the home page says how to make the first
    (there is no sign-up). Asked until an account exists, never after: accounts are never
    removed, so the answer cannot turn back."""

    def __init__(self, accounts: Callable[[], Awaitable[Sequence[Account]]]) -> None:
        self.accounts = accounts
        self.seen = False

    async def missing(self) -> bool:
        if not self.seen:
            self.seen = bool(await self.accounts())
        return not self.seen


def routes(sessions: Sessions, settings: Settings, method: SignIn,
           platform: PlatformSignIn | None = None,
           first: FirstAccount | None = None) -> list[Route]:
    label = platform.label if platform else None

    async def home(ctx: Ctx) -> Response:
        empty = ctx.visitor.account is None and first is not None and await first.missing()
        return page(ctx.request, ctx.visitor, "home.html",
                    first_account=FIRST_ACCOUNT_COMMAND if empty else None)

    async def signin_form(ctx: Ctx) -> Response:
        target = safe_next(ctx.request.query_params.get("next", "/"))
        if ctx.visitor.account is not None:
            return redirect(ctx.request, target)
        return page(ctx.request, ctx.visitor, "signin.html", next=target, username="",
                    error=None, platform=label)

    async def signin_post(ctx: Ctx) -> Response:
        target = safe_next(ctx.field("next") or "/")
        fields = {"username": ctx.field("username"), "password": ctx.field("password")}
        try:
            done = await sessions.sign_in(method, fields, ctx.ip)
        except (signin.SignInRefused, signin.SignInLocked) as refused:
            headers = ({"Retry-After": str(refused.retry_after)}
                       if isinstance(refused, signin.SignInLocked) else None)
            return page(ctx.request, ctx.visitor, "signin.html", status=refused.status,
                        headers=headers, next=target, username=fields["username"][:64],
                        error=refused.description, platform=label)
        session.start(ctx.request, done.account, done.at)
        session.flash(ctx.request, f"Signed in as {done.account.username}.")
        return redirect(ctx.request, target)

    async def signout(ctx: Ctx) -> Response:
        if ctx.visitor.session_id is not None:
            await sessions.end_session(ctx.visitor.session_id)
        session.session(ctx.request).clear()
        session.flash(ctx.request, "Signed out.")
        return redirect(ctx.request, "/")

    async def platform_start(ctx: Ctx) -> Response:
        assert platform is not None
        target = safe_next(ctx.request.query_params.get("next", "/"))
        if ctx.visitor.account is not None:
            return redirect(ctx.request, target)
        session.session(ctx.request)["signin_next"] = target
        return await platform.begin(ctx.request, site.absolute(
            ctx.request.scope, settings.public_url, "/signin/platform/callback"))

    def failed(ctx: Ctx, status: int, reason: str) -> Response:
        assert platform is not None
        return page(ctx.request, ctx.visitor, "signin_failed.html", status=status,
                    platform=platform.label, reason=reason)

    async def platform_callback(ctx: Ctx) -> Response:
        assert platform is not None
        query = ctx.request.query_params
        data = session.session(ctx.request)
        target = safe_next(str(data.pop("signin_next", "/")))
        error = query.get("error")
        if error is not None:
            # Forget the attempt: its state must not be usable later.
            for name in [k for k in data if k.startswith("_state_platform_")]:
                data.pop(name)
            return failed(ctx, 400, "cancelled" if error == "access_denied" else "refused")
        fields = {"code": query.get("code", ""), "state": query.get("state", "")}
        try:
            done = await sessions.sign_in(platform.bound(ctx.request), fields, ctx.ip)
        except signin.SignInLocked as locked:
            return page(ctx.request, ctx.visitor, "signin_failed.html", status=429,
                        headers={"Retry-After": str(locked.retry_after)},
                        platform=platform.label, reason="locked")
        except signin.SignInRefused:
            return failed(ctx, 401, "failed")
        except signin.PasswordAccount:
            return failed(ctx, 403, "password")
        session.start(ctx.request, done.account, done.at)
        session.flash(ctx.request, f"Signed in as {done.account.username}.")
        return redirect(ctx.request, target)

    extra = [] if platform is None else [
        page_route(sessions, "/signin/platform", platform_start, signed_in=False),
        page_route(sessions, "/signin/platform/callback", platform_callback, signed_in=False),
    ]
    return [
        *extra,
        page_route(sessions, "/", home, signed_in=False),
        page_route(sessions, "/signin", signin_form, signed_in=False),
        page_route(sessions, "/signin", signin_post, method="POST", signed_in=False),
        page_route(sessions, "/signout", signout, method="POST", signed_in=False),
    ]
