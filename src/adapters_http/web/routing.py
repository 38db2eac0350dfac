"""What every page handler shares: who is asking, the form of a post (its token checked
first), the sign-in requirement, and errors answered as pages rather than JSON."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar
from urllib.parse import quote

import attrs
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Message

from adapters_http import site
from adapters_http.bodies import parse_form, read_bytes
from adapters_http.decoding import check_text
from adapters_http.web.render import error_page
from adapters_http.web.session import Visitor, check_csrf, visitor
from licore.audit import Actor, ActorKind, acting
from licore.errors import InvalidRequest, LicoreError
from licore.model import Account
from licore.services.signin import Sessions

FORM_LIMIT = 256 * 1024  # the largest form is a product's settings (64 KiB of unlock data)


@attrs.frozen
class Ctx:
    request: Request
    visitor: Visitor
    form: dict[str, str]
    upload: bytes | None = None  # the file of a multipart post, on routes that take one
    upload_name: str = ""  # its file name as the browser sent it

    @property
    def account(self) -> Account:
        assert self.visitor.account is not None  # routes that need it are marked signed_in
        return self.visitor.account

    @property
    def session_id(self) -> str:
        assert self.visitor.session_id is not None
        return self.visitor.session_id

    def field(self, name: str) -> str:
        return self.form.get(name, "")

    def param(self, name: str) -> str:
        return str(self.request.path_params[name])

    @property
    def ip(self) -> str:
        return self.request.client.host if self.request.client else "unknown"


Handler = Callable[[Ctx], Awaitable[Response]]


def redirect(request: Request, path: str) -> RedirectResponse:
    """See other: `path`, a path of this site, under the prefix the site is served at."""
    return RedirectResponse(site.url(request.scope, path), status_code=303)


def safe_next(target: str) -> str:
    """Only a path on this site: never `//elsewhere` or a full URL (open redirect)."""
    if target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


async def read_form(request: Request) -> dict[str, str]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return {}  # no form, so no form token: refused as any post without one
    form: dict[str, str] = {}
    for name, value in parse_form(await read_bytes(request, FORM_LIMIT)):
        form.setdefault(name, value)
    return form


async def read_upload(request: Request, limit: int
                      ) -> tuple[dict[str, str], bytes | None, str]:
    """A multipart form with one file, the whole body bounded by `limit` before parsing."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "multipart/form-data":
        return await read_form(request), None, ""
    data = await read_bytes(request, limit)

    async def replay() -> Message:
        return {"type": "http.request", "body": data, "more_body": False}

    try:
        parsed = await Request(request.scope, replay).form(max_files=1, max_fields=16)
    except (MultiPartException, ValueError):
        raise InvalidRequest("the upload form is malformed") from None
    fields: dict[str, str] = {}
    upload: bytes | None = None
    upload_name = ""
    for name, value in parsed.multi_items():
        if isinstance(value, str):
            check_text(name, value)
            fields.setdefault(name, value)
        elif upload is None:
            upload = await value.read()
            upload_name = (value.filename or "")[:200]
    await parsed.close()
    return fields, upload, upload_name


def page_route(sessions: Sessions, path: str, handler: Handler, *, method: str = "GET",
               signed_in: bool = True, upload_limit: int | None = None) -> Route:
    async def endpoint(request: Request) -> Response:
        who = Visitor()
        try:
            who = await visitor(sessions, request)
            form: dict[str, str] = {}
            upload: bytes | None = None
            upload_name = ""
            if method == "POST":
                if upload_limit is None:
                    form = await read_form(request)
                else:
                    form, upload, upload_name = await read_upload(request, upload_limit)
                check_csrf(request, form)
            if signed_in and who.account is None:
                here = site.local_path(request.scope)  # `next` names pages without the prefix
                back = here + (f"?{request.url.query}" if request.url.query else "")
                target = back if method == "GET" else "/"
                return redirect(request, f"/signin?next={quote(target, safe='')}")
            if who.account is None:
                return await handler(Ctx(request, who, form, upload, upload_name))
            # What a page changes is the signed-in person's doing (docs/audit.md).
            with acting(Actor(ActorKind.PERSON, who.account.id)):
                return await handler(Ctx(request, who, form, upload, upload_name))
        except LicoreError as error:
            return error_page(request, who, error)

    return Route(path, endpoint, methods=[method], name=f"{method} {path}")


D = TypeVar("D")


@attrs.frozen
class Page(Generic[D]):
    """One row of a module's table of pages: its handler is a plain function of what the
    module's pages share (`D`: the use cases, a settings holder) and the request's `Ctx`."""

    method: str
    path: str
    handler: Callable[[D, Ctx], Awaitable[Response]]
    signed_in: bool = True  # False: a visitor who is not signed in sees it too
    upload: bool = False  # takes a model file: the body may be as large as an upload
    upload_limit: int | None = None  # takes another file, of at most this many bytes


def page_routes(sessions: Sessions, shared: D, pages: Sequence[Page[D]], *, prefix: str = "",
                upload_limit: int | None = None) -> list[Route]:
    """The table's routes, each handler given `shared`; `upload_limit` bounds the body of
    the pages that take a model file."""
    return [page_route(sessions, prefix + p.path, functools.partial(p.handler, shared),
                       method=p.method, signed_in=p.signed_in,
                       upload_limit=upload_limit if p.upload else p.upload_limit)
            for p in pages]
