"""The sellers' and app authors' guides, served at `/guides/NAME` from the Markdown in `docs/`.

Rendered with markdown-it-py (CommonMark and tables), raw HTML off: a guide's `<` is text.
A link to another served guide (`protection.md#rules`, or a code span naming
`docs/protection.md`) becomes its page under `/guides`, with the prefix the site is served
under; a link to a page that is not served (the architecture notes, say) keeps its words and
loses its link. Headings carry GitHub's anchors, so `events.md#how-delivery-is-scheduled`
lands where it did on GitHub. The wheel carries the same files (pyproject's force-include);
a checkout serves them from `docs/` itself."""

from __future__ import annotations

import functools
import re

import attrs
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from adapters_http import site
from adapters_http.web.render import HERE, page
from adapters_http.web.routing import Ctx, Page, page_routes
from licore.errors import NotFound
from licore.services.signin import Sessions


@attrs.frozen
class Guide:
    name: str  # docs/NAME.md, served at /guides/NAME
    reader: str  # who it is written for, as the index groups them


# In the index's order. The rest of docs/ is for people working on licore itself
# (architecture, performance, state machines) or for the operator of the server
# (operators.md, embedding.md), who reads it with the installation, not on the site.
GUIDES = (
    Guide("web", "Sellers"),
    Guide("protection", "Sellers"),
    Guide("licenses", "Sellers"),
    Guide("platform", "Sellers"),
    Guide("selling", "Sellers"),
    Guide("events", "Sellers"),
    Guide("instances", "Sellers"),
    Guide("audit", "Sellers"),
    Guide("runtime", "Game developers"),
    Guide("sdk", "Game developers"),
    Guide("sealing", "Game developers"),
    Guide("api", "App authors"),
)
BY_NAME = {g.name: g for g in GUIDES}
# A wheel has them beside the templates; a checkout has them in docs/.
SHIPPED = HERE / "docs"
SOURCE = SHIPPED if SHIPPED.is_dir() else HERE.parents[2] / "docs"
IMAGES = SOURCE / "screenshots"

SCREENSHOT = re.compile(r"screenshots/([a-z][a-z0-9-]*\.png)")


@functools.lru_cache(maxsize=64)
def rendered(name: str, root: str) -> tuple[str, str]:
    """The guide's title (its first heading) and its body as HTML, links under `root`."""
    from adapters_http.web import guide_markdown

    return guide_markdown.render((SOURCE / f"{name}.md").read_text(encoding="utf-8"), root,
                                 name)


async def index(_: None, ctx: Ctx) -> Response:
    root = site.root(ctx.request.scope)
    listed = [(g, rendered(g.name, root)[0]) for g in GUIDES]
    return page(ctx.request, ctx.visitor, "guides.html", listed=listed)


async def guide(_: None, ctx: Ctx) -> Response:
    name = ctx.param("name")
    if name not in BY_NAME:
        raise NotFound("no such guide")
    title, body = rendered(name, site.root(ctx.request.scope))
    return page(ctx.request, ctx.visitor, "guide.html", title=title, body=body)


async def image(_: None, ctx: Ctx) -> Response:
    found = SCREENSHOT.fullmatch(f"screenshots/{ctx.param('file')}")
    if found is None or not (IMAGES / found[1]).is_file():
        raise NotFound("no such image")
    return FileResponse(IMAGES / found[1], media_type="image/png",
                        headers={"Cache-Control": "public, max-age=3600"})


# The guides need nothing but the request: their table's handlers are given None.
PAGES: list[Page[None]] = [
    Page("GET", "/guides", index, signed_in=False),
    Page("GET", "/guides/screenshots/{file}", image, signed_in=False),
    Page("GET", "/guides/{name}", guide, signed_in=False),
]


def routes(sessions: Sessions) -> list[Route]:
    return page_routes(sessions, None, PAGES)
