"""`GET /v1/usage` (docs/api.md, "Usage"): how its query is read and its series written, as
JSON or as CSV (`format=csv`, or `Accept: text/csv`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from adapters_http import api_doc as d
from adapters_http.decoding import check_text
from licore import bounds
from licore.errors import InvalidRequest
from licore.services.settings import Settings
from licore.usage import (
    LICENSE_EVENTS,
    MAX_POINTS,
    Endpoint,
    Outcome,
    Point,
    Series,
    UsageOf,
)

MAX_TIME_DIGITS = 12  # unix seconds up to the year 33658


def _seconds(asked: Mapping[str, str], name: str) -> int:
    raw = asked.get(name)
    if raw is None:
        raise InvalidRequest(f"{name} is required (unix seconds)", name)
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_TIME_DIGITS:
        raise InvalidRequest(f"{name} must be unix seconds, a whole number", name)
    return int(raw)


def wants_csv(request: Request) -> bool:
    """`format` decides when sent; else the Accept header (a browser's link sends none)."""
    form = request.query_params.get("format")
    if form is not None and form not in ("json", "csv"):
        raise InvalidRequest("format must be json or csv", "format")
    if form is not None:
        return form == "csv"
    return "text/csv" in request.headers.get("accept", "")


async def usage_query(request: Request, settings: Settings) -> UsageOf:
    asked = request.query_params
    product_id = asked.get("product_id")
    return UsageOf(
        _seconds(asked, "from"), _seconds(asked, "to"),
        None if product_id is None else check_text("product_id", product_id),
        asked.get("granularity", "hour"), wants_csv(request))


def iso(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def point(p: Point) -> dict[str, Any]:
    return {"start": p.start, "calls": p.calls, "total": p.total, "users": p.users,
            "places": p.places, "new_places": p.new_places, "licenses": p.licenses,
            "downloads": p.downloads}


COLUMNS = [f"{e.value}_{o.value}" for e in Endpoint for o in Outcome]


def csv_text(found: Series) -> str:
    """One row a point: its start (unix seconds and UTC), each endpoint's calls by outcome,
    the total, distinct users and places, new places, the licenses granted, claimed,
    expired and revoked, and downloads (all versions; the JSON has them by version)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # RFC 4180
    writer.writerow(["start", "start_utc", *COLUMNS, "total", "users", "places",
                     "new_places", *(f"licenses_{k.value}" for k in LICENSE_EVENTS),
                     "downloads"])
    for p in found.points:
        writer.writerow([p.start, iso(p.start),
                         *(p.calls[e][o] for e in Endpoint for o in Outcome),
                         p.total, p.users, p.places, p.new_places,
                         *(p.licenses[k] for k in LICENSE_EVENTS),
                         sum(p.downloads.values())])
    return out.getvalue()


def csv_response(found: Series) -> Response:
    """The series as a CSV file to save (the API's and the dashboard's alike)."""
    q = found.query
    name = f"usage-{q.product_id or 'studio'}-{q.first}-{q.last}.csv"
    return Response(csv_text(found), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


def usage_answer(command: UsageOf, found: Series) -> dict[str, Any] | Response:
    q = found.query
    if command.csv:
        return csv_response(found)
    return {"product_id": q.product_id, "from": q.first, "to": q.last,
            "granularity": q.granularity.value, "points": [point(p) for p in found.points]}


_BY_OUTCOME = d.obj([o.value for o in Outcome], **{o.value: d.INT for o in Outcome})
POINT = d.obj(["start", "calls", "total", "users", "places", "new_places", "licenses",
               "downloads"],
              start=d.INT, calls=d.obj([e.value for e in Endpoint],
                                       **{e.value: _BY_OUTCOME for e in Endpoint}),
              total=d.INT, users=d.INT, places=d.INT, new_places=d.INT,
              licenses=d.obj([k.value for k in LICENSE_EVENTS],
                             **{k.value: d.INT for k in LICENSE_EVENTS}),
              downloads={"type": "object", "additionalProperties": d.INT,
                         "description": "downloads of buyers' copies, by version label"})
SERIES = d.obj(["product_id", "from", "to", "granularity", "points"],
               product_id=d.NSTR, to=d.INT, granularity={"enum": ["hour", "day"]},
               points=d.array(POINT), **{"from": d.INT})
GET_USAGE = d.Doc(
    "getUsage", "Runtime calls over time, per product or for the whole studio (extension)",
    SERIES,
    params=[{**d.q("product_id", False), "schema": d.limited(bounds.IDENTIFIER)},
            {**d.q("from"), "schema": d.INT}, {**d.q("to"), "schema": d.INT},
            {**d.q("granularity", False), "schema": {"enum": ["hour", "day"]}},
            {**d.q("format", False), "schema": {"enum": ["json", "csv"]}}],
    errors=(400, 404),
    ok_response={"description": "the series: JSON, or CSV with format=csv or Accept: "
                                "text/csv",
                 "content": {"application/json": {"schema": SERIES},
                             "text/csv": {"schema": d.STR}}},
    description=f"from (included) and to (excluded) are unix seconds, rounded out to whole "
                f"points (UTC hours or days); at most {MAX_POINTS} points a call. Every "
                "point of the range is answered, empty ones with zeros. Without product_id: "
                "every product of the studio (docs/api.md, \"Usage\").")
