"""The dashboard's usage pages: the studio's (`/dashboard/{studio}/usage`) and a product's
(`.../products/{product}/usage`), over the last 7, 30 or 90 days (`?days=`), as inline SVG
charts (`usage_chart`) and a table of the same numbers; `usage.csv` beside each answers
those numbers as the API's CSV, for a seller signed in on the page (no app key needed)."""

from __future__ import annotations

from starlette.responses import Response

from adapters_http.usage_api import csv_response
from adapters_http.web.render import page
from adapters_http.web.routing import Ctx
from adapters_http.web.usage_chart import by_outcome, calls_chart, people_chart, when
from licore.errors import InvalidRequest
from licore.services.dashboard import Dashboard
from licore.usage import LICENSE_EVENTS, PERIODS, Outcome


def _days(ctx: Ctx) -> int:
    raw = ctx.request.query_params.get("days", str(PERIODS[0]))
    if not raw.isascii() or not raw.isdigit() or int(raw) not in PERIODS:
        raise InvalidRequest("days must be 7, 30 or 90", "days")
    return int(raw)


async def _usage(board: Dashboard, ctx: Ctx, product_id: str | None,
                 as_csv: bool = False) -> Response:
    here = await board.take_seat(ctx.account.id, ctx.param("studio_id"))
    days = _days(ctx)
    found, products = await board.usage(here, product_id, days)
    if as_csv:
        return csv_response(found)
    titles = {p.id: p.title for p in products}
    title = titles.get(product_id, "") if product_id is not None else here.studio.name
    return page(ctx.request, ctx.visitor, "dashboard_usage.html", seat=here,
                product_id=product_id, title=title, days=days, periods=PERIODS,
                found=found, products=products, calls=calls_chart(found, title),
                people=people_chart(found, title), when=when, by_outcome=by_outcome,
                Outcome=Outcome, license_events=LICENSE_EVENTS)


async def studio_usage(board: Dashboard, ctx: Ctx) -> Response:
    return await _usage(board, ctx, None)


async def product_usage(board: Dashboard, ctx: Ctx) -> Response:
    return await _usage(board, ctx, ctx.param("product_id"))


async def studio_usage_csv(board: Dashboard, ctx: Ctx) -> Response:
    return await _usage(board, ctx, None, as_csv=True)


async def product_usage_csv(board: Dashboard, ctx: Ctx) -> Response:
    return await _usage(board, ctx, ctx.param("product_id"), as_csv=True)
