"""Tracing against what a motivated buyer does to a leaked copy: renaming every local to
`a1, a2, ...` with the key cut and the code reformatted, merging copies of two and three
colluders, appending junk, and planting a second license's key. The product is a third of
the test corpus (about 300 lines in 25 scripts, strong and light rules) plus a script that
holds the key, with 200 licenses as candidates; copies are made for six of them. Every
trace must name a buyer whose copy was used, or say it cannot tell: never anyone else."""

from __future__ import annotations

import random
import secrets
import string
from pathlib import Path

import pytest

from adapters_protection.analysis import analyse
from adapters_protection.edits import apply
from adapters_protection.luau_protector import LuauProtector
from adapters_protection.syntax import parser
from adapters_protection.tracing import trace
from licore.protection import Candidate, Trace, parse_protection_settings
from tests.protection.test_tracing import _cut_and_reformat, _tokens

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.luau"))[::3]
PLACEHOLDER = "LICORE_LICENSE_KEY"
KEYED = """
local LICENSE = "LICORE_LICENSE_KEY"
local Players = game and game:GetService("Players")
local function check(key)
  if #key ~= 43 then return false end
  return string.sub(key, 1, 3) == "lk_"
end
return {ok = check(LICENSE), players = Players}
"""
RULES = parse_protection_settings({"rules": [
    {"names": [p.stem for p in CORPUS[::2]] + ["License"], "preset": "strong"},
    {"paths": ["Product/*"], "preset": "light"},
]})
BUYERS = 6
Scripts = list[tuple[str, str]]


def _key() -> str:
    return "lk_" + "".join(secrets.choice(string.ascii_letters + string.digits)
                           for _ in range(40))


def _copy(key: str) -> Scripts:
    protector = LuauProtector()
    product = [("Product/License", KEYED)] + [(f"Product/{p.stem}", p.read_text())
                                              for p in CORPUS]
    return [(path, protector.protect(path, source.replace(PLACEHOLDER, key), RULES,
                                     key.encode())) for path, source in product]


def renamed(text: str) -> str:
    """Every local variable renamed to a1, a2, ... in order of declaration, the way a
    de-obfuscation tool would (scopes from the protector's own analysis)."""
    data = text.encode()
    analysis = analyse(parser().parse(data).root_node)
    edits = []
    for n, binding in enumerate((b for b in analysis.bindings if b.declaration is not None),
                                1):
        edits += [(ref.start_byte, ref.end_byte, f"a{n}".encode())
                  for ref in binding.references]
    return apply(data, edits).decode()


def attacked(scripts: Scripts, seed: int) -> Scripts:
    """Renamed, every string emptied (the key with them), reformatted, comments added."""
    return _cut_and_reformat([(path, renamed(text)) for path, text in scripts],
                             random.Random(seed))


def _merge(copies: list[Scripts], rng: random.Random, majority: bool) -> Scripts:
    """One leaked product from several buyers' copies. Where the copies line up token for
    token (light scripts, once renamed and cut), each stretch where they differ comes from
    one colluder (the most common variant when `majority`, else a random one); scripts
    that do not line up (strong rules reorder per license) come whole from one of them."""
    out = []
    for versions in zip(*copies, strict=True):
        path = versions[0][0]
        streams = [_tokens(parser().parse(text.encode()).root_node) for _, text in versions]
        if len({len(s) for s in streams}) != 1:
            out.append((path, rng.choice(versions)[1]))
            continue
        merged: list[str] = []
        i, size = 0, len(streams[0])
        while i < size:
            if len({s[i] for s in streams}) == 1:
                merged.append(streams[0][i])
                i += 1
                continue
            j = i
            while j < size and len({s[j] for s in streams}) > 1:
                j += 1
            variants = [tuple(s[i:j]) for s in streams]
            if majority:
                best = max(variants.count(v) for v in variants)
                pick = rng.choice([v for v in variants if variants.count(v) == best])
            else:
                pick = rng.choice(variants)
            merged += pick
            i = j
        out.append((path, " ".join(merged)))
    return out


@pytest.fixture(scope="module")
def world() -> tuple[list[str], list[Candidate], list[Scripts]]:
    """The keys and candidates, and the first six buyers' copies as the attack leaves them
    (renamed, cut, reformatted)."""
    keys = [_key() for _ in range(200)]
    ids = [f"lic_{i:03d}" for i in range(len(keys))]
    candidates = [Candidate(i, k.encode()) for i, k in zip(ids, keys, strict=True)]
    copies = [attacked(_copy(keys[i]), seed=i) for i in range(BUYERS)]
    return keys, candidates, copies


def _innocent_never_named(found: Trace, guilty: set[str]) -> None:
    assert found.license_id is None or found.license_id in guilty, found


def test_a_renamed_copy_with_its_key_cut_is_traced_to_its_buyer(
        world: tuple[list[str], list[Candidate], list[Scripts]]) -> None:
    keys, candidates, copies = world
    for buyer in range(3):
        leaked = copies[buyer]
        text = "\n".join(t for _, t in leaked)
        assert keys[buyer] not in text and "lk_" not in text
        found = trace(leaked, candidates)
        assert found.license_id == f"lic_{buyer:03d}", found
        assert not found.key_found and found.marked_names == 0
        assert any(e.startswith("the watermark names this license") for e in found.evidence)


@pytest.mark.parametrize("colluders", [(0, 1), (2, 3, 4), (1, 3, 5)])
@pytest.mark.parametrize("majority", [False, True])
def test_merged_copies_name_a_colluder_and_never_an_innocent(
        world: tuple[list[str], list[Candidate], list[Scripts]],
        colluders: tuple[int, ...], majority: bool) -> None:
    _, candidates, copies = world
    rng = random.Random(len(colluders) * 10 + majority)
    leaked = _merge([copies[c] for c in colluders], rng, majority)
    found = trace(leaked, candidates)
    assert found.license_id in {f"lic_{c:03d}" for c in colluders}, found


def _junk(size: int, rng: random.Random, numbers: bool) -> str:
    words = []
    total = 0
    while total < size:
        word = "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(2, 9)))
        if numbers and rng.random() < 0.3:
            word = rng.choice([str(rng.randint(0, 99999)), hex(rng.randint(0, 99999)),
                               f"x == {rng.randint(0, 9)}", f"t.{word}", f't["{word}"]'])
        words.append(word)
        total += len(word) + 1
    return " ".join(words)


def test_junk_alone_names_nobody_among_a_thousand_licenses() -> None:
    rng = random.Random(11)
    candidates = [Candidate(f"lic_{i}", f"secret-{i}".encode()) for i in range(1000)]
    for numbers in (False, True):
        found = trace([("Junk.lua", _junk(1 << 20, rng, numbers))], candidates)
        assert found.license_id is None, found
        assert found.evidence[0].startswith(("cannot tell", "the copy carries no watermark"))


def test_junk_appended_to_a_leak_still_names_the_buyer_or_nobody(
        world: tuple[list[str], list[Candidate], list[Scripts]]) -> None:
    _, candidates, copies = world
    rng = random.Random(3)
    leaked = copies[0]
    words = [*leaked, ("Junk.lua", _junk(1 << 20, rng, numbers=False))]
    assert trace(words, candidates).license_id == "lic_000"
    code_like = [*leaked, ("Junk.lua", _junk(1 << 19, rng, numbers=True))]
    _innocent_never_named(trace(code_like, candidates), {"lic_000"})


def test_a_planted_key_does_not_name_its_license(
        world: tuple[list[str], list[Candidate], list[Scripts]]) -> None:
    keys, candidates, copies = world
    leaked = copies[1]
    planted = [("Product/License", f'local key = "{keys[7]}"\n' + leaked[0][1]), *leaked[1:]]
    found = trace(planted, candidates)
    assert found.license_id == "lic_001"
    assert found.possibly_planted == ("lic_007",)
    assert any(e.startswith("possibly planted: the key of lic_007") for e in found.evidence)
    # Where nothing else is left (no rule with a watermark, or all of it rewritten), the key
    # names nobody: anyone who saw it could have put it there.
    bare = trace([("Product/License", f'local key = "{keys[7]}"\nreturn key')], candidates)
    assert bare.license_id is None and bare.possibly_planted == ("lic_007",)
    assert "names nobody on its own" in bare.evidence[1]
