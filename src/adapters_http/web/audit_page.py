"""The dashboard's audit page, `/dashboard/{studio_id}/audit` (docs/web.md): the studio's
audit trail, newest first, filtered by action, actor, subject and days, a page at a time."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.responses import Response

from adapters_http.decoding import check_text
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx
from licore.commands import ListAudit, Paging
from licore.errors import InvalidRequest
from licore.services.dashboard import Dashboard

SHOWN = 50
FILTERS = ("action", "actor", "subject")
DAY = 86400


def _day(ctx: Ctx, name: str) -> int | None:
    """A day the date field names (YYYY-MM-DD), as the unix second it starts at, in UTC."""
    text = ctx.request.query_params.get(name, "").strip()
    if not text:
        return None
    try:
        return int(datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).timestamp())
    except ValueError:
        raise InvalidRequest(f"{name} must be a date like 2026-01-31", name) from None


def _text(ctx: Ctx, name: str) -> str | None:
    return check_text(name, ctx.request.query_params.get(name, "").strip()) or None


def query_of(ctx: Ctx) -> ListAudit:
    until = _day(ctx, "to")
    return ListAudit(_text(ctx, "action"), _text(ctx, "actor"), _text(ctx, "subject"),
                     _day(ctx, "from"), None if until is None else until + DAY - 1,
                     Paging(SHOWN, _text(ctx, "cursor")))


async def audit_page(board: Dashboard, ctx: Ctx) -> Response:
    here = await board.take_seat(ctx.account.id, ctx.param("studio_id"))
    shown = await board.audit(here, query_of(ctx))
    asked = {name: ctx.request.query_params.get(name, "")
             for name in (*FILTERS, "from", "to")}
    return page(ctx.request, ctx.visitor, "dashboard_audit.html", seat=here,
                found=shown.page, names=shown.names, asked=asked)
