"""The web session: a signed cookie (Starlette's session middleware, itsdangerous), HttpOnly,
SameSite=Lax, Secure when the public URL is https, and its Path the prefix the site is served
under; the form token every post must carry.

What the cookie holds: the session's random id, the account id, when it signed in, the form
token, which user code the approval page was opened for, and until the next page the flash
message and what was just done to an alert row. No password, key or device code.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Any

import attrs
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters_http import site
from licore.errors import LicoreError
from licore.model import Account
from licore.services.signin import Sessions

COOKIE = "licore_session"
MAX_AGE = 12 * 3600  # seconds from sign-in


class CsrfRefused(LicoreError):
    code = "csrf_refused"
    status = 403

    def __init__(self) -> None:
        super().__init__("this form did not come from this site or has expired; "
                         "go back, reload the page and try again")


@attrs.frozen
class Visitor:
    account: Account | None = None
    session_id: str | None = None


class SiteSessions:
    """Starlette's session middleware with the cookie's `Path` set to the prefix the site is
    served under (`/` at the top of a host), so a site mounted at `/licensing` neither sends
    its cookie to the host's other applications nor is shadowed by theirs. The middleware
    takes its path once, so there is one per prefix; a process sees one or two (the
    prefix is the server's or the embedder's setting, never the client's)."""

    def __init__(self, app: ASGIApp, /, **options: Any) -> None:
        self.app = app
        self.options = options
        self.by_root: dict[str, SessionMiddleware] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        root = site.root(scope)
        sessions = self.by_root.get(root)
        if sessions is None:
            sessions = SessionMiddleware(self.app, path=root or "/", **self.options)
            self.by_root[root] = sessions
        await sessions(scope, receive, send)


def session(request: Request) -> dict[str, Any]:
    data: dict[str, Any] = request.session
    return data


def csrf_token(request: Request) -> str:
    data = session(request)
    token = data.get("csrf")
    if not isinstance(token, str):
        token = secrets.token_urlsafe(32)
        data["csrf"] = token
    return token


def check_csrf(request: Request, form: Mapping[str, str]) -> None:
    expected = session(request).get("csrf")
    sent = form.get("csrf")
    if not isinstance(expected, str) or not isinstance(sent, str) or not hmac.compare_digest(
            expected.encode(), sent.encode()):
        raise CsrfRefused()


def flash(request: Request, message: str) -> None:
    session(request)["flash"] = message


def pop_flash(request: Request) -> str | None:
    data = session(request)
    if "flash" not in data:
        return None
    message = data.pop("flash")
    return message if isinstance(message, str) else None


def mark_row(request: Request, row_id: str, done: str) -> None:
    """Say, in the next page only, what was just done to one row of a table (an alert)."""
    session(request)["row"] = [row_id, done]


def pop_row_mark(request: Request) -> tuple[str, str] | None:
    mark = session(request).pop("row", None)
    if not isinstance(mark, list) or len(mark) != 2:
        return None
    return str(mark[0]), str(mark[1])


async def visitor(sessions: Sessions, request: Request) -> Visitor:
    """Who is asking: a signed-in person whose session was not signed out, or nobody."""
    data = session(request)
    account_id, session_id, started = data.get("uid"), data.get("sid"), data.get("at")
    if not isinstance(account_id, str) or not isinstance(session_id, str):
        return Visitor()
    # A session lasts MAX_AGE from sign-in, however often it is renewed.
    account = (await sessions.visitor(account_id, session_id, started, MAX_AGE)
               if isinstance(started, int) else None)
    if account is None:
        data.clear()
        return Visitor()
    return Visitor(account, session_id)


def start(request: Request, account: Account, now: int) -> None:
    """A fresh session at sign-in: new id and new form token, so nothing carries over."""
    data = session(request)
    data.clear()
    data.update({"sid": secrets.token_urlsafe(24), "uid": account.id, "at": now,
                 "csrf": secrets.token_urlsafe(32)})
