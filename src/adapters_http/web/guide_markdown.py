"""A guide's Markdown as HTML for this site: CommonMark and tables, raw HTML off, links to
other served guides pointed at their pages under the site's prefix (adapters_http.web.guides
says which guides are served and why the links read as they do).

A module of its own so that markdown-it is imported when the first guide is asked for, not
when a worker or a `licore` command starts: it was a tenth of their import time."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from adapters_http.web.guides import BY_NAME, SCREENSHOT

_GUIDE_LINK = re.compile(r"(?:\./|docs/)?([a-z][a-z-]*)\.md(#[\w-]*)?")


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
    found = SCREENSHOT.fullmatch(str(token.attrs.get("src", "")))
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


_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")




def render(text: str, root: str, name: str) -> tuple[str, str]:
    """The guide's title (its first heading, else `name`) and its body as HTML, links under
    `root`."""
    tokens = _MARKDOWN.parse(text)
    title = name
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            words = tokens[i + 1].content.replace("`", "")
            token.attrs["id"] = _slug(words)
            if token.tag == "h1" and title == name:
                title = words
        elif token.type == "inline" and token.children is not None:
            token.children = _rewrite_inline(token.children, root)
    return title, _MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {})
