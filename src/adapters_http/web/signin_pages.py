"""The home page, sign-in and sign-out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import attrs
from starlette.responses import Response
from starlette.routing import Route

from adapters_http import site
from adapters_http.observability import signin_refused
from adapters_http.web import session
from adapters_http.web.platform_signin import PlatformSignIn
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, Page, page_routes, redirect, safe_next
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


@attrs.frozen
class SignInSite:
    """What these pages are given: the sessions, the settings (the site's address), how
    people sign in with a password and, when offered, with the platform."""

    sessions: Sessions
    settings: Settings
    method: SignIn
    platform: PlatformSignIn | None = None
    first: FirstAccount | None = None

    @property
    def label(self) -> str | None:
        return self.platform.label if self.platform else None


async def home(s: SignInSite, ctx: Ctx) -> Response:
    empty = ctx.visitor.account is None and s.first is not None and await s.first.missing()
    return page(ctx.request, ctx.visitor, "home.html",
                first_account=FIRST_ACCOUNT_COMMAND if empty else None)


async def signin_form(s: SignInSite, ctx: Ctx) -> Response:
    target = safe_next(ctx.request.query_params.get("next", "/"))
    if ctx.visitor.account is not None:
        return redirect(ctx.request, target)
    return page(ctx.request, ctx.visitor, "signin.html", next=target, username="",
                error=None, platform=s.label)


def _reason(refused: signin.SignInRefused | signin.SignInLocked) -> str:
    """Why, for `licore_signin_refusals_total` (docs/operators.md)."""
    if isinstance(refused, signin.SignInLocked):
        return refused.limit
    return "disabled" if isinstance(refused, signin.AccountDisabled) else "wrong"


async def signin_post(s: SignInSite, ctx: Ctx) -> Response:
    target = safe_next(ctx.field("next") or "/")
    fields = {"username": ctx.field("username"), "password": ctx.field("password")}
    try:
        done = await s.sessions.sign_in(s.method, fields, ctx.ip)
    except (signin.SignInRefused, signin.SignInLocked) as refused:
        signin_refused(_reason(refused))
        headers = ({"Retry-After": str(refused.retry_after)}
                   if isinstance(refused, signin.SignInLocked) else None)
        return page(ctx.request, ctx.visitor, "signin.html", status=refused.status,
                    headers=headers, next=target, username=fields["username"][:64],
                    error=refused.description, platform=s.label)
    session.start(ctx.request, done.account, done.at)
    session.flash(ctx.request, f"Signed in as {done.account.username}.")
    return redirect(ctx.request, target)


async def signout(s: SignInSite, ctx: Ctx) -> Response:
    if ctx.visitor.session_id is not None:
        await s.sessions.end_session(ctx.visitor.session_id)
    session.session(ctx.request).clear()
    session.flash(ctx.request, "Signed out.")
    return redirect(ctx.request, "/")


async def platform_start(s: SignInSite, ctx: Ctx) -> Response:
    assert s.platform is not None
    target = safe_next(ctx.request.query_params.get("next", "/"))
    if ctx.visitor.account is not None:
        return redirect(ctx.request, target)
    session.session(ctx.request)["signin_next"] = target
    return await s.platform.begin(ctx.request, site.absolute(
        ctx.request.scope, s.settings.public_url, "/signin/platform/callback"))


def _failed(platform: PlatformSignIn, ctx: Ctx, status: int, reason: str) -> Response:
    return page(ctx.request, ctx.visitor, "signin_failed.html", status=status,
                platform=platform.label, reason=reason)


async def platform_callback(s: SignInSite, ctx: Ctx) -> Response:
    platform = s.platform
    assert platform is not None
    query = ctx.request.query_params
    data = session.session(ctx.request)
    target = safe_next(str(data.pop("signin_next", "/")))
    error = query.get("error")
    if error is not None:
        # Forget the attempt: its state must not be usable later.
        for name in [k for k in data if k.startswith("_state_platform_")]:
            data.pop(name)
        return _failed(platform, ctx, 400, "cancelled" if error == "access_denied" else "refused")
    fields = {"code": query.get("code", ""), "state": query.get("state", "")}
    try:
        done = await s.sessions.sign_in(platform.bound(ctx.request), fields, ctx.ip)
    except signin.SignInLocked as locked:
        signin_refused(locked.limit)
        return page(ctx.request, ctx.visitor, "signin_failed.html", status=429,
                    headers={"Retry-After": str(locked.retry_after)},
                    platform=platform.label, reason="locked")
    except signin.SignInRefused:
        signin_refused("wrong")
        return _failed(platform, ctx, 401, "failed")
    except signin.PasswordAccount:
        return _failed(platform, ctx, 403, "password")
    session.start(ctx.request, done.account, done.at)
    session.flash(ctx.request, f"Signed in as {done.account.username}.")
    return redirect(ctx.request, target)


PLATFORM_PAGES: list[Page[SignInSite]] = [
    Page("GET", "/signin/platform", platform_start, signed_in=False),
    Page("GET", "/signin/platform/callback", platform_callback, signed_in=False),
]
PAGES: list[Page[SignInSite]] = [
    Page("GET", "/", home, signed_in=False),
    Page("GET", "/signin", signin_form, signed_in=False),
    Page("POST", "/signin", signin_post, signed_in=False),
    Page("POST", "/signout", signout, signed_in=False),
]


def routes(sessions: Sessions, settings: Settings, method: SignIn,
           platform: PlatformSignIn | None = None,
           first: FirstAccount | None = None) -> list[Route]:
    """The pages; the platform's two only when sign-in with the platform is offered."""
    pages = PAGES if platform is None else [*PLATFORM_PAGES, *PAGES]
    return page_routes(sessions, SignInSite(sessions, settings, method, platform, first), pages)
