"""Naming the license a leaked copy was made for, or saying that it cannot be told.

Four kinds of evidence, and hints:
- the watermark (`watermark`, `fingerprint`): each carrier read off the copy is a position
  of a Tardos code; every candidate gets a score, and a candidate is accused only when its
  score reaches the threshold at which an innocent license gets there with probability at
  most CHANCE / 4 / (number of candidates), a Chernoff bound computed on the very positions
  read (so it grows with them: junk that adds positions raises the bar, and a copy whose
  few positions drown in a large file reaches it for nobody). It survives renaming,
  reformatting, minifying and cutting the key, and a merge of several buyers' copies
  accuses one of them;
- shape marks (`shape`): the statement forms of sealed functions, which survive a lift of
  the sealed program back to Luau, renaming and canonical rewrites; scored like the
  watermark, apart from it, against a bar of their own (CHANCE / 4 / candidates);
- marked names (`names`): generated identifiers carry a keyed mark; a license is accused by
  them only when it has more marked names than chance would give any of the candidates
  among the words examined, with probability at most CHANCE / 4 overall;
- the key, where it survives (as written, or inside a string `encrypt_strings` encrypted).
  A key can be planted by anyone who saw it, so it is a hint and never evidence: it names
  nobody on its own. Its license's watermark score is held to a bar set for as many
  hypotheses as keys were found rather than one per candidate (probability at most
  CHANCE / 4 overall); a key whose license no mark names is reported as possibly planted.
  A sealed program found in the text (`artefacts`) is a hint the same way: pasted as easily
  as a key, it agrees with marks or is listed as possibly planted, never a verdict.

Together an innocent license is named with probability at most CHANCE per trace, whatever
the leaker added, removed or planted, as long as they do not know that license's secret.

Everything is one pass over the text, then scoring: work grows with the text's length, and
with the number of candidates only up to a fixed budget (positions and words beyond it are
sampled by a keyed choice a leaker cannot aim at).

Pure: no I/O. The caller loads candidates (for example every license of one product).
"""

from __future__ import annotations

import hashlib
import heapq
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import attrs

from adapters_protection import fingerprint, shape
from adapters_protection.names import (
    MARK_LENGTH,
    MARK_SPACE,
    mark_hasher,
    mark_key,
    mark_value,
)
from adapters_protection.strings import STEPS, BadEscape, decipher, decode_quoted
from adapters_protection.syntax import parser
from adapters_protection.watermark import read
from licore.protection import Candidate, Trace

CHANCE = 1e-6  # the most a trace may risk naming an innocent, all evidence together
_WATERMARK_CHANCE = CHANCE / 4  # shared among the candidates
_SHAPE_CHANCE = CHANCE / 4  # shared among the candidates (`shape`)
_NAMES_CHANCE = CHANCE / 4  # shared among the candidates
_HINTED_CHANCE = CHANCE / 4  # shared among the licenses whose keys or artefacts appear
MIN_MARKED_NAMES = 2
_WORK = 2_000_000  # positions x candidates scored at most
_NAME_WORK = 250_000  # words x candidates checked for a mark at most
_MIN_SAMPLE = 2048
_MIN_WORDS = 256
_READ = 4 << 20  # characters of watermark read at most (a keyed sample beyond)
_PIECE = 64 << 10
_SHAPE_READ = 512 << 10  # characters of whole scripts read for shape marks (a lift is small)
_MIN_KEY_LENGTH = 16  # shorter secrets are not searched for as text
_MAX_DECODED = 500  # encrypted literals tried under every decoder step
_MAX_DECODED_LENGTH = 256
_MARK_CHANCE = float(62 ** -MARK_LENGTH)
_CANDIDATE_NAME = re.compile(
    rf"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9]{{1,}}[A-Za-z0-9]{{{MARK_LENGTH}}}(?![A-Za-z0-9_])")
_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.|\\\n)*)"|\'((?:[^\'\\\n]|\\.|\\\n)*)\'', re.DOTALL)


@attrs.frozen
class _Place:
    path: str
    offset: int
    text: str = attrs.field(repr=False, eq=False)

    def __str__(self) -> str:
        return f"{self.path}, line {self.text.count(chr(10), 0, self.offset) + 1}"


@attrs.frozen
class _Accusation:
    license_id: str
    strength: float  # -ln of the chance an innocent would have this much evidence
    evidence: tuple[str, ...]


def _sample(items: Sequence[bytes], size: int, key: fingerprint.Keyed) -> list[bytes]:
    """At most `size` of `items`, picked by a keyed order nobody without `key` can aim at."""
    if len(items) <= size:
        return list(items)
    digests = [hashlib.blake2b(i, digest_size=16).digest() for i in items]
    order = key.units(digests)
    return [items[k] for k in heapq.nsmallest(size, range(len(items)), key=order.__getitem__)]


def _pieces(scripts: Sequence[tuple[str, str]], key: fingerprint.Keyed
            ) -> list[tuple[int, int, str]]:
    """What the watermark is read from: (script, offset, text). All of it up to _READ
    characters; beyond that, a keyed sample of _PIECE-character stretches adding up to
    _READ, each starting at a line. Only a sample of positions is scored anyway, and the
    sample taken here is one a leaker cannot aim at either, so reading everything would
    change nothing but the time."""
    total = sum(len(text) for _, text in scripts)
    if total <= _READ:
        return [(i, 0, text) for i, (_, text) in enumerate(scripts)]
    spans = [(i, at) for i, (_, text) in enumerate(scripts) for at in range(0, len(text), _PIECE)]
    ids = [f"{i}:{at}".encode() for i, at in spans]
    order = key.units([hashlib.blake2b(b, digest_size=16).digest() for b in ids])
    chosen = sorted(heapq.nsmallest(_READ // _PIECE, range(len(spans)), key=order.__getitem__))
    out = []
    for k in chosen:
        i, at = spans[k]
        text = scripts[i][1]
        start = at if at == 0 else text.find("\n", at, at + _PIECE) + 1 or at
        out.append((i, start, text[start:at + _PIECE]))
    return out


@attrs.define
class _Watermark:
    """The code bits read off the copy: majority per position, ties dropped."""

    observed: fingerprint.Observed
    places: dict[bytes, tuple[int, int]]  # position -> (script, offset) where first seen

    @classmethod
    def read(cls, scripts: Sequence[tuple[str, str]], bias_key: fingerprint.Keyed,
             budget: int) -> _Watermark:
        votes: dict[bytes, list[int]] = {}
        places: dict[bytes, tuple[int, int]] = {}
        for index, base, text in _pieces(scripts, bias_key):
            for position, bit, offset in read(text):
                tally = votes.get(position)
                if tally is None:
                    votes[position] = tally = [0, 0]
                    places[position] = (index, base + offset)
                tally[bit] += 1
        decided = [p for p, (zeros, ones) in votes.items() if zeros != ones]
        decided = _sample(decided, budget, bias_key)
        bits = {p: 1 if votes[p][1] > votes[p][0] else 0 for p in decided}
        return cls(fingerprint.Observed(bits, bias_key), places)


_DEFAULT_BIAS = fingerprint.bias_key(fingerprint.DEFAULT_SECRET)


def trace(scripts: Sequence[tuple[str, str]], candidates: Sequence[Candidate],
          bias_key: fingerprint.Keyed = _DEFAULT_BIAS,
          readings: Sequence[tuple[str, str]] = (),
          artefacts: Mapping[str, str] = MappingProxyType({})) -> Trace:
    """The candidate these scripts were protected for, with the evidence; a Trace without
    a license when the evidence does not reach the thresholds. `readings` are more texts
    to look for keys in (the literals as deciphered for candidates), not for marks.
    `artefacts` are other things found in the copy that belong to one license (its sealed
    program), license id -> what was found, in words.

    Only marks name a license: the watermark, or marked names. A key or an artefact found
    in the copy is a hint, never evidence on its own (text can be pasted: a comment holding
    another buyer's program literals costs the leaker one line): it lowers the bar for its
    license's watermark score (one hypothesis per hint found instead of one per
    candidate), and one whose license the marks do not name is reported as possibly
    planted, beside whoever the marks name."""
    n = max(1, len(candidates))
    watermark = _Watermark.read(scripts, bias_key, max(_MIN_SAMPLE, _WORK // n))
    observed = watermark.observed
    m = len(observed)
    z = observed.threshold(_WATERMARK_CHANCE / n)
    scores = {c.license_id: observed.score(fingerprint.bits_key(c.license_secret))
              for c in candidates}
    shaped = _shape_observed(scripts, bias_key)
    z_shape = shaped.threshold(_SHAPE_CHANCE / n)
    names, examined = _marked_names(scripts, candidates, bias_key,
                                    max(_MIN_WORDS, _NAME_WORK // n))
    needed_names = _names_needed(examined, _NAMES_CHANCE / n)
    keys = _keys_found([*scripts, *readings], candidates)
    hints = set(keys) | set(artefacts)
    # A hinted license is held to a bar set for as many hypotheses as hints were found, so
    # planting many keys or programs buys a leaker nothing: all of them together stay under
    # _HINTED_CHANCE.
    hinted = observed.threshold(_HINTED_CHANCE / max(1, len(hints)))

    accused: list[_Accusation] = []
    for c in candidates:
        evidence, strength = [], 0.0
        score = scores[c.license_id]
        if score >= z:
            strength = -observed.log_chance(score)
            evidence.append(_watermark_words(observed, score, z, n))
        elif c.license_id in hints and score >= hinted:
            strength = -observed.log_chance(score)
            evidence.append(_hinted_words(observed, score, hinted, len(hints)))
        if len(shaped):
            shape_score = shaped.score(fingerprint.bits_key(c.license_secret))
            if shape_score >= z_shape:
                strength = max(strength, -shaped.log_chance(shape_score))
                evidence.append(_shape_words(shaped, shape_score, z_shape, n))
        marked = names.get(c.license_id, [])
        if len(marked) >= needed_names:
            strength = max(strength, -_names_log_tail(examined, len(marked)))
            evidence.append(_names_words(marked, scripts))
        if evidence:
            if c.license_id in keys:
                evidence.insert(0, f"the license key appears in {keys[c.license_id]}")
            if c.license_id in artefacts:
                evidence.append(f"the copy also holds {artefacts[c.license_id]} of this "
                                "license, which agrees with its marks")
            if 0 < len(marked) < needed_names:
                evidence.append(_names_words(marked, scripts))
            accused.append(_Accusation(c.license_id, strength, tuple(evidence)))
    if accused:
        return _named(accused, keys, artefacts, names, m)
    evidence = [_about(m, z, sum(len(text) for _, text in scripts))]
    # Even the right license would not be expected to reach the bar on so few positions:
    # the watermark can neither confirm nor contradict a hint.
    blind = fingerprint.positions_expected(m, 1) < hinted
    if keys:
        evidence.append(_planted_words(sorted(keys), keys, blind))
    evidence += [_artefact_words(lid, what, blind) for lid, what in sorted(artefacts.items())]
    return Trace(None, tuple(evidence), 0, False, m, tuple(sorted(hints)))


def _shape_observed(scripts: Sequence[tuple[str, str]],
                    bias_key: fingerprint.Keyed) -> fingerprint.Observed:
    """The shape marks read off the scripts (`shape`): majority per position, ties
    dropped; whole scripts up to _SHAPE_READ characters in all (a bigger script is not
    read for them: what a lifted crack holds is small, and junk only dilutes)."""
    votes: dict[bytes, list[int]] = {}
    budget = _SHAPE_READ
    parse = parser()
    for _, text in scripts:
        if len(text) > budget:
            continue
        budget -= len(text)
        for position, bit, _ in shape.read(text.encode(), lambda d: parse.parse(d).root_node):
            votes.setdefault(position, [0, 0])[bit] += 1
    return fingerprint.Observed(
        {p: 1 if ones > zeros else 0 for p, (zeros, ones) in votes.items() if zeros != ones},
        bias_key)


def _shape_words(shaped: fingerprint.Observed, score: float, z: float, n: int) -> str:
    exponent = (shaped.log_chance(score) + math.log(n)) / math.log(10)
    return (f"the shape of the code names this license: score {score:.0f} over "
            f"{len(shaped)} statement positions, where {z:.0f} names a license (statement "
            f"forms a renamer, a lifter and canonical rewrites keep); the chance that any of "
            f"the {n} licenses reaches this score without its copy having been used is below "
            f"1e{math.floor(exponent) + 1}")


def _artefact_words(license_id: str, what: str, blind: bool) -> str:
    why = ("the copy carries too few watermark positions to confirm any license"
           if blind else "the watermark does not confirm it")
    return (f"possibly planted: the copy holds {what} of {license_id}, but {why}; such text "
            "is pasted as easily as a key, so it names nobody on its own")


def _named(accused: list[_Accusation], keys: dict[str, _Place], artefacts: Mapping[str, str],
           names: dict[str, list[str]], m: int) -> Trace:
    accused.sort(key=lambda a: -a.strength)
    top = accused[0]
    evidence = list(top.evidence)
    if len(accused) > 1:
        evidence.append("the evidence also names " + ", ".join(
            a.license_id for a in accused[1:6]) + (" and others" if len(accused) > 6 else "")
                        + ": copies of several licenses were probably merged")
    named = {a.license_id for a in accused}
    planted = sorted(lid for lid in keys if lid not in named)
    foreign = sorted(lid for lid in artefacts if lid not in named)
    if foreign:
        # Another license's program beside the marks of this one: either copies were
        # merged or it was planted. Both are listed, and the marks decide who is named.
        evidence.append(
            "copies merged, or material planted: the copy also holds "
            + "; ".join(f"{artefacts[lid]} of {lid}" for lid in foreign[:5])
            + (" and more" if len(foreign) > 5 else "")
            + ", which no mark confirms")
    planted_all = sorted(set(planted) | set(foreign))
    if planted:
        one = len(planted) == 1
        evidence.append(
            f"possibly planted: the {'key' if one else 'keys'} of " + ", ".join(planted[:5])
            + (" and others" if len(planted) > 5 else "")
            + (" also appears, but no mark names that license, so its copy is"
               if one else " also appear, but no mark names those licenses, so their "
               "copies are") + " not shown to be what leaked")
    return Trace(top.license_id, tuple(evidence), len(names.get(top.license_id, [])),
                 top.license_id in keys, m, tuple(planted_all))


def _planted_words(planted: list[str], keys: dict[str, _Place], blind: bool) -> str:
    where = (f"the key of {planted[0]} appears in {keys[planted[0]]}" if len(planted) == 1
             else "the keys of " + ", ".join(planted[:5])
             + (" and others" if len(planted) > 5 else "") + " appear")
    why = ("the copy carries too few watermark positions to confirm any license"
           if blind else "the watermark does not confirm it")
    return (f"possibly planted: {where}, but {why}; a key is copied as easily as any text, "
            "so it names nobody on its own")


def _about(m: int, z: float, size: int) -> str:
    if size > _READ:
        where = (f"in the {_READ >> 20} MiB read of its {size / (1 << 20):.0f} MiB (a keyed "
                 "sample a leaker cannot aim at: text added to a copy dilutes its watermark)")
        if m == 0:
            return f"cannot tell: no watermark position was found {where}"
        return (f"cannot tell: the copy carries {m} watermark positions {where}, and no "
                f"license's score reaches the {z:.0f} needed to name it")
    if m == 0:
        return "the copy carries no watermark (no rule with watermark was applied to it, " \
               "or it was rewritten beyond recognition)"
    return (f"cannot tell: the copy carries {m} watermark positions, and no license's "
            f"score reaches the {z:.0f} needed to name it")


def _watermark_words(observed: fingerprint.Observed, score: float, z: float, n: int) -> str:
    exponent = (observed.log_chance(score) + math.log(n)) / math.log(10)
    return (f"the watermark names this license: score {score:.0f} over "
            f"{len(observed)} positions, where {z:.0f} names a license; the chance "
            f"that any of the {n} licenses reaches this score without its copy having been "
            f"used is below 1e{math.floor(exponent) + 1}")


def _hinted_words(observed: fingerprint.Observed, score: float, bar: float,
                  keys: int) -> str:
    exponent = (observed.log_chance(score) + math.log(keys)) / math.log(10)
    return (f"the watermark confirms this license, whose key appears: score {score:.0f} "
            f"over {len(observed)} positions, where {bar:.0f} confirms a license whose key "
            f"appears; the chance that this score is reached without its copy having been "
            f"used is below 1e{math.floor(exponent) + 1}")


def _names_words(marked: list[str], scripts: Sequence[tuple[str, str]]) -> str:
    shown = ", ".join(f"{name} ({_place_of(name, scripts)})" for name in marked[:5])
    more = f" and {len(marked) - 5} more" if len(marked) > 5 else ""
    return f"{len(marked)} generated names carry this license's mark: {shown}{more}"


def _place_of(word: str, scripts: Sequence[tuple[str, str]]) -> _Place:
    for path, text in scripts:
        m = re.search(rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])", text)
        if m:
            return _Place(path, m.start(), text)
    return _Place(scripts[0][0], 0, scripts[0][1])


def _names_log_tail(words: Sequence[str], k: int) -> float:
    """ln of an upper bound on the chance that `k` or more of `words` carry a given
    license's mark by accident: C(W, k) q^k <= (W q)^k / k!."""
    lam = max(len(words), 1) * _MARK_CHANCE
    return min(0.0, k * math.log(lam) - math.lgamma(k + 1))


def _names_needed(words: Sequence[str], chance: float) -> int:
    k = MIN_MARKED_NAMES
    while _names_log_tail(words, k) > math.log(chance):
        k += 1
    return k


def _marked_names(scripts: Sequence[tuple[str, str]], candidates: Sequence[Candidate],
                  bias_key: fingerprint.Keyed, budget: int
                  ) -> tuple[dict[str, list[str]], list[str]]:
    """Each candidate's marked names among the words examined, and the words examined (a
    keyed sample when there are too many)."""
    found_words: set[str] = set()
    for _, _, text in _pieces(scripts, bias_key):
        found_words.update(_CANDIDATE_NAME.findall(text))
    words = [w.decode() for w in _sample(sorted(w.encode() for w in found_words), budget,
                                         bias_key)]
    stems = [(w[:-MARK_LENGTH].encode(), mark_value(w[-MARK_LENGTH:]), w) for w in words]
    found: dict[str, list[str]] = {}
    for c in candidates:
        hasher = mark_hasher(mark_key(c.license_secret))
        marked = []
        for stem, value, word in stems:
            h = hasher.copy()
            h.update(stem)
            if int.from_bytes(h.digest(), "big") % MARK_SPACE == value:
                marked.append(word)
        if marked:
            found[c.license_id] = sorted(marked)
    return found, words


def _keys_found(scripts: Sequence[tuple[str, str]],
                candidates: Sequence[Candidate]) -> dict[str, _Place]:
    """Where each candidate's key (or searched secret) first appears: as written, or inside
    a literal under some decoder step. One pass per distinct 3-byte key prefix (license
    keys all start `lk_`), not per key."""
    wanted: dict[bytes, list[Candidate]] = {}
    for c in candidates:
        if len(c.searched) >= _MIN_KEY_LENGTH:
            wanted.setdefault(c.searched[:_MIN_KEY_LENGTH], []).append(c)
    if not wanted:
        return {}
    found: dict[str, _Place] = {}
    shortest = min(len(c.searched) for group in wanted.values() for c in group)
    prefixes = frozenset(head[:3] for head in wanted)
    for path, text in scripts:
        data = text.encode()
        for at, c in _occurrences(data, wanted, prefixes):
            if c.license_id not in found:
                found[c.license_id] = _Place(path, len(data[:at].decode(errors="replace")),
                                             text)
        for value, offset in _decodings(text, shortest):
            for _, c in _occurrences(value, wanted, prefixes):
                if c.license_id not in found:
                    found[c.license_id] = _Place(path, offset, text)
    return found


def _occurrences(data: bytes, wanted: dict[bytes, list[Candidate]],
                 prefixes: frozenset[bytes]) -> Iterable[tuple[int, Candidate]]:
    for prefix in prefixes:
        at = data.find(prefix)
        while at >= 0:
            head = data[at:at + _MIN_KEY_LENGTH]
            if head in wanted:
                for c in wanted[head]:
                    if data.startswith(c.searched, at):
                        yield at, c
            at = data.find(prefix, at + 1)


def _decodings(text: str, shortest: int) -> Iterable[tuple[bytes, int]]:
    """String literals that could hold a key, each under every `encrypt_strings` step (the
    first few hundred: a key sits in a short literal near where the seller wrote it)."""
    tried = 0
    for m in _QUOTED.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        if len(body) < shortest + 1:
            continue
        try:
            value = decode_quoted(body)
        except BadEscape:
            continue
        if not shortest < len(value) <= _MAX_DECODED_LENGTH:
            continue
        tried += 1
        if tried > _MAX_DECODED:
            return
        k, rest = value[0], value[1:]
        for step in STEPS:
            yield decipher(rest, k, step), m.start()
