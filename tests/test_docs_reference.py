"""The reference docs say what holds now: history lives in git, not in `docs/` or the README.

No commit hashes, no dated headings or dated prose (dates inside code, such as an example
timestamp or a backup's file name, are examples, not history), a performance page short
enough to read, and an architecture page that names every module group a newcomer will
meet under `src/`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
SRC = ROOT / "src"

# A hex token of 7 to 40 characters holding both digits and letters, standing alone (not a
# piece of a longer word or of a hyphenated UUID): how git abbreviates a commit.
_HASH = re.compile(r"(?<![\w-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])")
_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
# Example values the docs spell out on purpose (the sealing vectors' nonce).
_EXAMPLES = {"0123456789abcdef"}


def _prose(text: str) -> str:
    """The text outside fenced blocks and code spans, line breaks kept so lines still count."""
    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    return _CODE_SPAN.sub(blank, _FENCE.sub(blank, text))


def _hits(pattern: re.Pattern[str], text: str) -> list[str]:
    return [f"{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for m in pattern.finditer(text) if m.group(0) not in _EXAMPLES]


def test_no_doc_names_a_commit() -> None:
    found = {doc.name: hits for doc in DOCS if (hits := _hits(_HASH, doc.read_text()))}
    assert found == {}


def test_no_doc_dates_its_prose_or_headings() -> None:
    found = {doc.name: hits for doc in DOCS if (hits := _hits(_DATE, _prose(doc.read_text())))}
    assert found == {}


def test_no_doc_speaks_of_sessions() -> None:
    history = re.compile(r"\b(earlier|this|last|previous) sessions?\b", re.IGNORECASE)
    found = {doc.name: hits for doc in DOCS if (hits := _hits(history, doc.read_text()))}
    assert found == {}


def test_performance_page_stays_readable() -> None:
    lines = (ROOT / "docs" / "performance.md").read_text().count("\n")
    assert lines <= 600


def _module_map() -> dict[str, str]:
    """The rows of architecture.md's "Where things live" table, by the package they name."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    rows = (line for line in section.splitlines() if line.startswith("| `"))
    return {row.split("`", 2)[1].rstrip("/"): row for row in rows}


def test_architecture_names_every_module_group() -> None:
    """Every package under `src/` has its row, and the storage adapters' rows name each of
    their per-aggregate modules (`sql/` and its in-memory twin `memory/`)."""
    rows = _module_map()
    packages = {str(init.parent.relative_to(SRC)) for init in SRC.rglob("__init__.py")}
    assert "adapters_storage/sql" in packages
    assert sorted(packages - rows.keys()) == []
    unnamed = {f"{folder}/{path.name}"
               for folder in ("adapters_storage/sql", "adapters_storage/memory")
               for path in (SRC / folder).glob("*.py")
               if path.name != "__init__.py" and f"`{path.name}`" not in rows[folder]}
    assert sorted(unnamed) == []
