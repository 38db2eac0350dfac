"""The guides' rendering (adapters_http/web/guides.py): raw HTML stays text, links between
guides become their pages under the site's prefix, headings carry GitHub's anchors, and the
wheel ships exactly the guides the server serves."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from adapters_http.web import guides

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A guide of the test's own, served under the name `web`."""
    monkeypatch.setattr(guides, "SOURCE", tmp_path)
    guides.rendered.cache_clear()
    return tmp_path / "web.md"


def render(written: Path, text: str, root: str = "/licensing") -> str:
    written.write_text(text)
    guides.rendered.cache_clear()
    return guides.rendered("web", root)[1]


def test_raw_html_in_a_guide_is_text(written: Path) -> None:
    html = render(written, "# T\n\n<script>alert(1)</script> and <b>bold</b>\n\n"
                           "<div onclick=x>block</div>\n")
    assert "<script" not in html and "<b>" not in html and "<div" not in html
    assert "&lt;script&gt;" in html and "&lt;div onclick=x&gt;" in html


@pytest.mark.parametrize(("markdown", "expected"), [
    ("[rules](protection.md)", '<a href="/licensing/guides/protection">rules</a>'),
    ("[rules](protection.md#the-rules)",
     '<a href="/licensing/guides/protection#the-rules">rules</a>'),
    ("[here](#later)", '<a href="#later">here</a>'),
    ("[RFC](https://www.rfc-editor.org/rfc/rfc8628)",
     '<a href="https://www.rfc-editor.org/rfc/rfc8628">RFC</a>'),
    # a page that is not served keeps its words, not its link
    ("[notes](architecture.md)", "<p>notes</p>"),
    ("[ops](operators.md#production)", "<p>ops</p>"),
    # a guide named in the words or in a code span becomes a link to it
    ("see docs/licenses.md.", 'see <a href="/licensing/guides/licenses">docs/licenses.md</a>.'),
    ("see `docs/sdk.md`", '<a href="/licensing/guides/sdk"><code>docs/sdk.md</code></a>'),
    ("see docs/performance.md", "<p>see docs/performance.md</p>"),
    ("![The page](screenshots/dashboard.png)",
     '<img src="/licensing/guides/screenshots/dashboard.png" alt="The page" />'),
    ("![Elsewhere](https://example.com/x.png)", "<p>Elsewhere</p>"),
    ("`<b>`", "<code>&lt;b&gt;</code>"),
])
def test_links_images_and_names(written: Path, markdown: str, expected: str) -> None:
    assert expected in render(written, f"# T\n\n{markdown}\n")


def test_links_at_the_top_of_a_host_have_no_prefix(written: Path) -> None:
    assert '<a href="/guides/api">' in render(written, "# T\n\n[api](api.md)\n", root="")


def test_headings_carry_githubs_anchors(written: Path) -> None:
    html = render(written, "# The web pages\n\n## Signing in (`/signin`), again\n\n"
                           "### Set-up (operator)\n")
    assert re.findall(r'id="([^"]+)"', html) == [
        "the-web-pages", "signing-in-signin-again", "set-up-operator"]
    assert guides.rendered("web", "")[0] == "The web pages"


def test_every_served_guide_renders_from_docs() -> None:
    guides.rendered.cache_clear()
    for guide in guides.GUIDES:
        title, body = guides.rendered(guide.name, "/p")
        assert title != guide.name and body.startswith("<h1"), guide.name
        for href in re.findall(r'href="(/[^"]*)"', body):
            name = href.removeprefix("/p/guides/").split("#")[0]
            assert name in guides.BY_NAME, (guide.name, href)  # no link to a missing page


def test_the_wheel_ships_exactly_the_served_guides() -> None:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shipped = table["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert shipped == {
        **{f"docs/{g.name}.md": f"adapters_http/web/docs/{g.name}.md" for g in guides.GUIDES},
        "docs/screenshots": "adapters_http/web/docs/screenshots"}
