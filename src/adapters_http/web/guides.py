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
from markdown_it import MarkdownIt
from markdown_it.token import Token
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from adapters_http import site
from adapters_http.web.render import HERE, page
from adapters_http.web.routing import Ctx, page_route
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

_GUIDE_LINK = re.compile(r"(?:\./|docs/)?([a-z][a-z-]*)\.md(#[\w-]*)?")
_IMAGE = re.compile(r"screenshots/([a-z][a-z0-9-]*\.png)")


def _slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _link_target(href: str, root: str) -> str | None:
    """Where a link in a guide goes on this site; None: to a page not served here."""
    if href.startswith("#") or re.match(r"[a-z][a-z0-9+.-]*:", href):
        return href  # within the page, or elsewhere on the web
    found = _GUIDE_LINK.fullmatch(href)
    if found is None or found[1] not in BY_NAME:
        return None
    return f"{root}/guides/{found[1]}{found[2] or ''}"


def _code_link(code: Token, root: str) -> list[Token]:
    """`docs/protection.md` in a code span: the same span, as a link to that guide."""
    found = _GUIDE_LINK.fullmatch(code.content)
    if found is None or not code.content.startswith("docs/") or found[1] not in BY_NAME:
        return [code]
    opening = Token("link_open", "a", 1, attrs={"href": f"{root}/guides/{found[1]}"})
    return [opening, code, Token("link_close", "a", -1)]


_NAMED = re.compile(r"docs/([a-z][a-z-]*)\.md")


def _text_links(text: Token, root: str) -> list[Token]:
    """`docs/licenses.md` in the words: the same words, linked to that guide."""
    out: list[Token] = []
    at = 0
    for found in _NAMED.finditer(text.content):
        if found[1] not in BY_NAME:
            continue
        out.append(Token("text", "", 0, content=text.content[at:found.start()]))
        out.append(Token("link_open", "a", 1, attrs={"href": f"{root}/guides/{found[1]}"}))
        out.append(Token("text", "", 0, content=found[0]))
        out.append(Token("link_close", "a", -1))
        at = found.end()
    return [*out, Token("text", "", 0, content=text.content[at:])] if out else [text]


def _image(token: Token, root: str) -> Token:
    """A screenshot at its address here; any other image is its words (alt text) only."""
    if token.type != "image":
        return token
    found = _IMAGE.fullmatch(str(token.attrs.get("src", "")))
    if found is None:
        return Token("text", "", 0, content=token.content)
    token.attrs["src"] = f"{root}/guides/screenshots/{found[1]}"
    return token


def _outside_links(token: Token, root: str) -> list[Token]:
    if token.type == "text":
        return _text_links(token, root)
    if token.type == "code_inline":
        return _code_link(token, root)
    return [_image(token, root)]


def _rewrite_inline(children: list[Token], root: str) -> list[Token]:
    out: list[Token] = []
    inside = dropped = False  # in a link; in one whose page is not served (links never nest)
    for token in children:
        if token.type == "link_open":
            target = _link_target(str(token.attrs.get("href", "")), root)
            inside, dropped = True, target is None
            token.attrs["href"] = target or ""
            out += [] if dropped else [token]
        elif token.type == "link_close":
            out += [] if dropped else [token]
            inside = dropped = False
        else:
            out += [_image(token, root)] if inside else _outside_links(token, root)
    return out


_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


@functools.lru_cache(maxsize=64)
def rendered(name: str, root: str) -> tuple[str, str]:
    """The guide's title (its first heading) and its body as HTML, links under `root`."""
    tokens = _markdown.parse((SOURCE / f"{name}.md").read_text(encoding="utf-8"))
    title = name
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            words = tokens[i + 1].content.replace("`", "")
            token.attrs["id"] = _slug(words)
            if token.tag == "h1" and title == name:
                title = words
        elif token.type == "inline" and token.children is not None:
            token.children = _rewrite_inline(token.children, root)
    return title, _markdown.renderer.render(tokens, _markdown.options, {})


def routes(sessions: Sessions) -> list[Route]:
    async def index(ctx: Ctx) -> Response:
        root = site.root(ctx.request.scope)
        listed = [(g, rendered(g.name, root)[0]) for g in GUIDES]
        return page(ctx.request, ctx.visitor, "guides.html", listed=listed)

    async def guide(ctx: Ctx) -> Response:
        name = ctx.param("name")
        if name not in BY_NAME:
            raise NotFound("no such guide")
        title, body = rendered(name, site.root(ctx.request.scope))
        return page(ctx.request, ctx.visitor, "guide.html", title=title, body=body)

    async def image(ctx: Ctx) -> Response:
        found = _IMAGE.fullmatch(f"screenshots/{ctx.param('file')}")
        if found is None or not (IMAGES / found[1]).is_file():
            raise NotFound("no such image")
        return FileResponse(IMAGES / found[1], media_type="image/png",
                            headers={"Cache-Control": "public, max-age=3600"})

    return [
        page_route(sessions, "/guides", index, signed_in=False),
        page_route(sessions, "/guides/screenshots/{file}", image, signed_in=False),
        page_route(sessions, "/guides/{name}", guide, signed_in=False),
    ]
