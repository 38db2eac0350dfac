"""Naming the license a leaked copy was made for.

Two kinds of evidence, weighed together:
- marked names: every identifier the protector generates ends in a mark keyed by the
  license secret (see `names`). Marks survive cutting the key out, changing or removing
  comments and whitespace, and reformatting, because none of those renames identifiers.
  A random word carries a given license's mark with probability 62**-4 (about 1 in 15
  million), and at least two marked names are required.
- the key itself, where it survives: as written, or inside a string encrypted by
  `encrypt_strings` (each encrypted literal is tried against every possible decoder step,
  so this works without the script's path).

A candidate carries the secret its copies were protected with (what `Protector.protect`
received) and, when it still has one, its plain key to search for; without a separate key the
secret itself is searched for (callers that protect with the plain key).

Pure: no I/O. The caller loads candidates (for example every license of one product).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from adapters_protection.names import MARK_LENGTH, carries_mark, mark_key
from adapters_protection.strings import STEPS, BadEscape, decipher, decode_quoted
from licore.protection import Candidate, Trace

MIN_MARKED_NAMES = 2
KEY_WEIGHT = 3  # the key counts as much as three marked names
_MIN_KEY_LENGTH = 16  # shorter secrets are not searched for as text
_CANDIDATE_NAME = re.compile(
    rf"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]{{1,}}[A-Za-z0-9]{{{MARK_LENGTH}}}(?![A-Za-z0-9_])")
_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.|\\\n)*)"|\'((?:[^\'\\\n]|\\.|\\\n)*)\'', re.DOTALL)


@attrs.frozen
class _Place:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}, line {self.line}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _names(scripts: Sequence[tuple[str, str]]) -> dict[str, _Place]:
    """Every word that could be a generated name, with where it first occurs."""
    found: dict[str, _Place] = {}
    for path, text in scripts:
        for m in _CANDIDATE_NAME.finditer(text):
            if m.group(0) not in found:
                found[m.group(0)] = _Place(path, _line(text, m.start()))
    return found


def _decodings(scripts: Sequence[tuple[str, str]], shortest: int) -> list[tuple[bytes, _Place]]:
    """Each string literal long enough to hold a key, as written and as it would decode
    under every possible `encrypt_strings` step."""
    out: list[tuple[bytes, _Place]] = []
    for path, text in scripts:
        for m in _QUOTED.finditer(text):
            try:
                value = decode_quoted(m.group(1) if m.group(1) is not None else m.group(2))
            except BadEscape:
                continue
            if len(value) < shortest:
                continue
            place = _Place(path, _line(text, m.start()))
            out.append((value, place))
            if len(value) < shortest + 1:
                continue
            k, body = value[0], value[1:]
            out += [(decipher(body, k, step), place) for step in STEPS]
    return out


def trace(scripts: Sequence[tuple[str, str]],
          candidates: Sequence[Candidate]) -> Trace | None:
    """The candidate these scripts were protected for, with the evidence, or None when no
    candidate has enough evidence or two are tied."""
    names = _names(scripts)
    keyed = [c for c in candidates if len(c.searched) >= _MIN_KEY_LENGTH]
    shortest = min((len(c.searched) for c in keyed), default=0)
    texts = _decodings(scripts, shortest) if keyed else []
    plain = [(text.encode(), _Place(path, 0)) for path, text in scripts]
    results: list[tuple[int, Trace]] = []
    for candidate in candidates:
        key = mark_key(candidate.license_secret)
        marked = [name for name in names if carries_mark(key, name)]
        key_place = None
        if len(candidate.searched) >= _MIN_KEY_LENGTH:
            key_place = _find(candidate.searched, plain, texts)
        evidence = []
        if key_place is not None:
            evidence.append(f"the license key appears in {key_place}")
        if marked:
            shown = ", ".join(f"{n} ({names[n]})" for n in marked[:5])
            more = f" and {len(marked) - 5} more" if len(marked) > 5 else ""
            evidence.append(f"{len(marked)} generated names carry this license's mark: "
                            f"{shown}{more}")
        score = len(marked) + (KEY_WEIGHT if key_place is not None else 0)
        if key_place is not None or len(marked) >= MIN_MARKED_NAMES:
            results.append((score, Trace(candidate.license_id, tuple(evidence), len(marked),
                                         key_place is not None)))
    results.sort(key=lambda r: -r[0])
    if not results or (len(results) > 1 and results[0][0] == results[1][0]):
        return None
    return results[0][1]


def _find(secret: bytes, plain: list[tuple[bytes, _Place]],
          decoded: list[tuple[bytes, _Place]]) -> _Place | None:
    for text, place in plain:
        at = text.find(secret)
        if at >= 0:
            return _Place(place.path, text.count(b"\n", 0, at) + 1)
    for value, place in decoded:
        if secret in value:
            return place
    return None
