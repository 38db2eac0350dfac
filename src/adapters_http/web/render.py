"""Pages from Jinja2 templates, the answers for errors, and the headers every page carries."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.types import Message, Receive, Scope, Send

from adapters_http import site
from adapters_http.http_layer import HttpLayer
from adapters_http.web.session import Visitor, csrf_token, pop_flash
from licore import scopes as sc
from licore.errors import LicoreError, NotFound
from licore.model import UnlockData
from licore.protection import ProtectionSettings, settings_document

HERE = Path(__file__).parent
CSS = HERE / "static" / "web.css"

ALERT_WORDS = {
    "leaked_key": "Leaked key: used under another user id",
    "stolen_product": "Stolen product: running source differs from the published one",
    "key_user_mismatch": "Key belongs to a different account",
    "invalid_key_for_license": "Key does not match the license, or the license is paused",
    "unrecognised_place": "Seen in more places than the studio allows",
}


def when(ts: int | None) -> str:
    if ts is None:
        return "never"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _audit_value(value: object) -> str:
    """A changed field's value as the audit page shows it."""
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _seller_json(value: UnlockData | ProtectionSettings) -> str:
    """The seller's unlock data or rules as the JSON text they edit in a form."""
    if isinstance(value, UnlockData):
        return value.text
    return json.dumps(settings_document(value), separators=(",", ":"), sort_keys=True)


def _paragraphs(text: str) -> list[str]:
    """A seller's plain text as paragraphs (a blank line between two); every character is
    escaped where it is written, so a description can never be markup."""
    return [p.strip() for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]


def _permission(value: object) -> str:
    text = value.value if isinstance(value, sc.Permission) else str(value)
    return text.replace("_", " ")


templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters["when"] = when
templates.filters["audit_value"] = _audit_value
templates.filters["permission"] = _permission
templates.filters["seller_json"] = _seller_json
templates.filters["paragraphs"] = _paragraphs
templates.globals["SCOPE_WORDS"] = sc.DESCRIPTIONS
templates.globals["ALERT_WORDS"] = ALERT_WORDS


def page(request: Request, visitor: Visitor, name: str, status: int = 200,
         headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    """Render a template. The form token is made only when a form asks for it."""
    # `root` starts every link, form and asset address (the prefix the site is served under);
    # `path` is the page's own, without it, as the links name pages.
    html = templates.get_template(name).render(
        visitor=visitor, root=site.root(request.scope), path=site.local_path(request.scope),
        flash=pop_flash(request),
        csrf=lambda: csrf_token(request), **context)
    return HTMLResponse(html, status_code=status, headers=headers)


TITLES = {400: "That did not work", 401: "Sign-in failed", 403: "Not allowed",
          404: "Not found", 409: "Already done", 413: "Too large", 429: "Too many tries"}


def error_page(request: Request, visitor: Visitor, error: LicoreError) -> HTMLResponse:
    # A person outside a studio learns nothing from the page: every 404 reads the same.
    text = "There is no such page." if isinstance(error, NotFound) else error.description
    headers = {}
    retry = getattr(error, "retry_after", None)
    if retry is not None:
        headers["Retry-After"] = str(retry)
    return page(request, visitor, "error.html", status=error.status, headers=headers,
                title=TITLES.get(error.status, "Something went wrong"), message=text)


async def stylesheet(request: Request) -> Response:
    return Response(CSS.read_bytes(), media_type="text/css",
                    headers={"Cache-Control": "public, max-age=3600"})


PAGE_HEADERS = [
    # No script runs on these pages; styles come from this origin only.
    (b"content-security-policy",
     b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
     b"frame-ancestors 'none'; base-uri 'none'"),
    (b"x-frame-options", b"DENY"),  # the approval page must never be framed (clickjacking)
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # a prefilled user code stays in this site
]


class PageHeaders(HttpLayer):
    """Security headers on every web answer; no caching of per-person pages."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def add(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in PAGE_HEADERS:
                    headers.setdefault(name.decode(), value.decode())
                headers.setdefault("cache-control", "no-store")
            await send(message)

        await self.app(scope, receive, add)
