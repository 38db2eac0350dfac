"""Usage charts as inline SVG: a pure function of the series (no script, no library, no
request to anywhere). Readable without colour: the outcomes differ by fill pattern as well
as shade and are named in a legend; every bar carries its numbers as text (`<title>` and
`aria-label`), and the page shows the same numbers in a table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import attrs
from markupsafe import Markup, escape

from licore.usage import Granularity, Outcome, Point, Series

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 8, 10, 36  # room for the axes' labels
TICKS = 4  # gridlines above zero

# Each outcome's look: a fill and a pattern, so they part without colour too.
PATTERNS = """<defs>
<pattern id="p-denied" width="6" height="6" patternUnits="userSpaceOnUse"
 patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3d9c4"/>
<line x1="0" y1="0" x2="0" y2="6" stroke="#a04a00" stroke-width="3"/></pattern>
<pattern id="p-rate_limited" width="5" height="5" patternUnits="userSpaceOnUse">
<rect width="5" height="5" fill="#fff"/><circle cx="2.5" cy="2.5" r="1.4" fill="#333"/></pattern>
</defs>"""
FILL = {Outcome.OK: "#2f5d8a", Outcome.DENIED: "url(#p-denied)",
        Outcome.RATE_LIMITED: "url(#p-rate_limited)"}
WORDS = {Outcome.OK: "passed", Outcome.DENIED: "denied", Outcome.RATE_LIMITED: "rate limited"}


def when(p: Point, granularity: Granularity) -> str:
    t = datetime.fromtimestamp(p.start, UTC)
    return t.strftime("%Y-%m-%d %H:00 UTC" if granularity is Granularity.HOUR
                      else "%Y-%m-%d")


def by_outcome(p: Point) -> dict[Outcome, int]:
    return {o: sum(by[o.value] for by in p.calls.values()) for o in Outcome}


def nice_top(value: int) -> int:
    """The y axis's top: TICKS times the smallest step of 1, 2 or 5 times a power of ten
    that reaches `value`, so every gridline is a round number."""
    step = 1
    while step * TICKS < value:
        digits = len(str(step)) - 1
        step = {1: 2, 2: 5, 5: 10}[step // 10 ** digits] * 10 ** digits
    return step * TICKS


@attrs.frozen
class Bar:
    label: str  # the point's time, as text
    parts: tuple[tuple[str, str, int], ...]  # (css name, fill, value), stacked bottom up
    text: str  # everything the bar says, as words


def _axes(top: int, plot_h: int) -> list[str]:
    out = []
    for i in range(TICKS + 1):
        value = top * i // TICKS
        y = TOP + plot_h - plot_h * i / TICKS
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" '
                   f'y2="{y:.1f}" stroke="#ccc" stroke-width="1"/>'
                   f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" '
                   f'font-size="11">{value:,}</text>')
    return out


def chart(name: str, bars: Sequence[Bar], legend: Sequence[tuple[str, str]]) -> Markup:
    """A stacked bar chart: `name` is its accessible name; `legend` (label, fill)."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = nice_top(max((sum(v for _, _, v in b.parts) for b in bars), default=0))
    slot = plot_w / max(len(bars), 1)
    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT + 22}" role="img" '
           f'aria-label="{escape(name)}" xmlns="http://www.w3.org/2000/svg">',
           f"<title>{escape(name)}</title>", PATTERNS, *_axes(top, plot_h)]
    every = max(1, len(bars) // 6)  # about six time labels along the bottom
    for i, bar in enumerate(bars):
        x, y = LEFT + i * slot, float(TOP + plot_h)
        out.append(f'<g class="bar" role="listitem" aria-label="{escape(bar.text)}" '
                   f'data-label="{escape(bar.label)}" '
                   + " ".join(f'data-{n}="{v}"' for n, _, v in bar.parts)
                   + f"><title>{escape(bar.text)}</title>")
        for css, fill, value in bar.parts:
            h = plot_h * value / top
            y -= h
            if value:
                out.append(f'<rect class="{css}" x="{x + slot * 0.1:.1f}" y="{y:.1f}" '
                           f'width="{slot * 0.8:.1f}" height="{h:.1f}" fill="{fill}" '
                           'stroke="#222" stroke-width="0.5"/>')
        out.append("</g>")
        if i % every == 0:
            out.append(f'<text x="{x + slot / 2:.1f}" y="{TOP + plot_h + 14}" '
                       f'text-anchor="middle" font-size="10">{escape(bar.label[:10])}</text>')
    for k, (label, fill) in enumerate(legend):
        lx = LEFT + k * 130
        out.append(f'<rect x="{lx}" y="{HEIGHT + 6}" width="14" height="12" fill="{fill}" '
                   f'stroke="#222" stroke-width="0.5"/><text x="{lx + 18}" y="{HEIGHT + 16}" '
                   f'font-size="11">{escape(label)}</text>')
    out.append("</svg>")
    # Safe: every text above passed `escape`; the rest is numbers and our own markup.
    return Markup("".join(out))  # noqa: S704


def calls_chart(found: Series, title: str) -> Markup:
    g = found.query.granularity

    def bar(p: Point) -> Bar:
        counts = by_outcome(p)
        words = ", ".join(f"{counts[o]:,} {WORDS[o]}" for o in Outcome)
        return Bar(when(p, g), tuple((o.value.replace("_", "-"), FILL[o], counts[o])
                                     for o in Outcome),
                   f"{when(p, g)}: {p.total:,} calls ({words})")

    return chart(f"Runtime calls of {title}, by {g.value}", [bar(p) for p in found.points],
                 [(WORDS[o], FILL[o]) for o in Outcome])


def people_chart(found: Series, title: str) -> Markup:
    g = found.query.granularity
    fill = "#5b8a3a"

    def bar(p: Point) -> Bar:
        return Bar(when(p, g), (("users", fill, p.users),),
                   f"{when(p, g)}: {p.users:,} users, {p.places:,} places, "
                   f"{p.new_places:,} new places")

    return chart(f"Distinct users of {title}, by {g.value}", [bar(p) for p in found.points],
                 [("users", fill)])

