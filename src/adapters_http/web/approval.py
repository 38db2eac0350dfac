"""The approval page at `{approval_url}` = `/device` (spec 4.1 and 5, contract 6).

The person enters the user code (prefilled from `verification_uri_complete`), sees the app and
the scopes it asks for in plain words, which of them survive and which are dropped, picks the
studio for studio scopes, and approves or denies. The device code and the key never appear.
"""

from __future__ import annotations

from typing import Any

import attrs
from starlette.responses import Response
from starlette.routing import Route

from adapters_http.web import session
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx, Page, page_routes
from licore import device_flow as df
from licore import scopes as sc
from licore.errors import ApprovalRefused, ExpiredToken, NotFound
from licore.services import device
from licore.services.dashboard import Dashboard
from licore.services.wiring import UseCases


@attrs.frozen
class Choice:
    """One way to approve: a studio (for studio scopes) or the person (library scopes)."""

    studio_id: str | None
    label: str
    granted: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...]  # (scope, the permission it needs)


async def _choices(board: Dashboard, account_id: str,
                   view: device.ApprovalView) -> list[Choice]:
    if view.kind is sc.KeyKind.LIBRARY:
        return [Choice(None, "Your own library", view.requested, ())]
    out = []
    for seat in await board.seats_of(account_id):
        granted = sc.Grantable(seat.permissions).filter(view.requested)
        dropped = tuple((s, needed.value) for s in view.requested
                        if s not in granted and (needed := sc.SCOPES[s][1]) is not None)
        out.append(Choice(seat.studio.id, seat.studio.name, granted, dropped))
    return out


def _linked(ctx: Ctx) -> str | None:
    value = session.session(ctx.request).get("link")
    return value if isinstance(value, str) else None


def _entry_page(ctx: Ctx, *, code: str, error: str | None = None, status: int = 200,
                tries_left: int | None = None) -> Response:
    return page(ctx.request, ctx.visitor, "device_entry.html", status=status, code=code,
                error=error, tries_left=tries_left)


def _burned_page(ctx: Ctx) -> Response:
    return page(ctx.request, ctx.visitor, "device_burned.html", status=403)


async def _consent_page(uc: UseCases, ctx: Ctx, view: device.ApprovalView, *,
                        status: int = 200, error: str | None = None,
                        chosen: str | None = None) -> Response:
    choices = await _choices(uc.dashboard, ctx.account.id, view)
    if chosen is None:
        chosen = next((c.studio_id for c in choices if c.granted), None)
    return page(ctx.request, ctx.visitor, "device_consent.html", status=status, view=view,
                choices=choices, chosen=chosen, error=error,
                studio_kind=view.kind is sc.KeyKind.STUDIO)


async def show(uc: UseCases, ctx: Ctx) -> Response:
    attempts = await uc.sessions.entry_attempts(ctx.session_id, _linked(ctx))
    if attempts.burned:
        return _burned_page(ctx)
    code = ctx.request.query_params.get("code", "")[:32]
    if code:
        # Opened from verification_uri_complete: five wrong entries in this session also
        # burn the authorization this link names (contract 6).
        session.session(ctx.request)["link"] = df.normalize_user_code(code)
    shown = df.normalize_user_code(code)
    return _entry_page(ctx, code=df.format_user_code(shown) if len(shown) == 8 else code)


async def look_up(uc: UseCases, ctx: Ctx) -> Response:
    entered = ctx.field("code")[:32]
    attempts = await uc.sessions.entry_attempts(ctx.session_id, _linked(ctx))
    try:
        view, after = await uc.device.look_up(entered, attempts, ctx.ip)
    except device.SessionBurned:
        return _burned_page(ctx)
    if view is None:
        await uc.sessions.count_wrong_entry(ctx.session_id)
        if after.burned:
            return _burned_page(ctx)
        return _entry_page(ctx, code=entered, status=400,
                           tries_left=df.WRONG_ENTRY_LIMIT - after.wrong,
                           error="No authorization is waiting for that code. Check the "
                                 "code your app shows and type it again.")
    # Only a code this session found by entering it may be decided on: deciding is
    # never a way around the wrong-entry count.
    session.session(ctx.request)["shown"] = df.normalize_user_code(view.user_code)
    return await _consent_page(uc, ctx, view)


async def decide(uc: UseCases, ctx: Ctx) -> Response:
    code = df.normalize_user_code(ctx.field("code"))
    data = session.session(ctx.request)
    if not code or data.get("shown") != code:
        return _entry_page(ctx, code="", status=400,
                           error="Enter the code your app shows first.")
    if (await uc.sessions.entry_attempts(ctx.session_id, _linked(ctx))).burned:
        return _burned_page(ctx)
    approve = ctx.field("decision") == "approve"
    studio_id = ctx.field("studio_id") or None
    view = await uc.device.pending_view(code)
    try:
        if view is None:
            raise ExpiredToken("this code is no longer waiting for approval")
        granted = await uc.device.decide(ctx.account.id, code, approve, studio_id)
    except ApprovalRefused:
        assert view is not None
        return await _consent_page(uc, ctx, view, status=403, chosen=studio_id,
                                   error=await _why_nothing_survives(uc, ctx, view, studio_id))
    except (ExpiredToken, NotFound):
        data.pop("shown", None)
        return page(ctx.request, ctx.visitor, "device_done.html", status=400,
                    outcome="gone", view=None, granted=(), dropped=())
    data.pop("shown", None)
    data.pop("link", None)
    return _done_page(ctx, view, granted, approve)


def _done_page(ctx: Ctx, view: device.ApprovalView, granted: tuple[str, ...],
               approve: bool) -> Response:
    dropped = tuple(s for s in view.requested if s not in granted)
    return page(ctx.request, ctx.visitor, "device_done.html",
                outcome="approved" if approve else "denied", view=view,
                granted=granted, dropped=dropped if approve else ())


async def _why_nothing_survives(uc: UseCases, ctx: Ctx, view: device.ApprovalView,
                                studio_id: str | None) -> str:
    choices = {c.studio_id: c for c in await _choices(uc.dashboard, ctx.account.id, view)}
    choice = choices.get(studio_id)
    if choice is None:
        return ("Choose a studio you belong to: an app asking for studio scopes acts for "
                "one studio, and only its members may approve.")
    needs: dict[str, Any] = {}
    for scope, permission in choice.dropped:
        needs.setdefault(permission.replace("_", " "), []).append(scope)
    wanted = "; ".join(f"{', '.join(scopes)} need the {perm} permission"
                       for perm, scopes in needs.items())
    return (f"Nothing was approved: in {choice.label} you may not grant any of the scopes "
            f"this app asks for ({wanted}). Ask the studio's owner, or deny.")


PAGES: list[Page[UseCases]] = [
    Page("GET", "/device", show),
    Page("POST", "/device", look_up),
    Page("POST", "/device/decide", decide),
]


def routes(uc: UseCases) -> list[Route]:
    return page_routes(uc.sessions, uc, PAGES)
