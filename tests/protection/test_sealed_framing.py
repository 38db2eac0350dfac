"""Nothing a leaker plants names anyone else (docs/protection.md, "What is weighed"): buyer A's
copy carrying buyer B's sealed-program literals (in a comment, in unused strings, as a second
program with its own loader), with or without B's key, names A or nobody, never B alone; a
program of B beside A's marks is listed as copies merged or planted, and a program alone
names nobody. The attack the property generalises is reproduced first, as it was reported:
A's untouched copy plus one comment line holding B's three program literals named B."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters_protection.luau_protector import LuauProtector
from licore.protection import Candidate, Trace, parse_protection_settings
from licore.sealing import sealing_context

HERE = Path(__file__).resolve().parent
SHOP = (HERE / "realistic" / "shop.luau").read_text()
SEALED = ("local function checksum", "local function verifyLicense", "function Shop:buy",
          "local function bestWeapon")
LICENSES = 12
COPIES = 4
PATH = "ServerScriptService/Shop"
CONTEXT = sealing_context("ver_framing", 0)


def _annotated() -> str:
    source = SHOP
    for head in SEALED:
        source = source.replace("\n" + head, "\n--@sealed\n" + head, 1)
    assert source.count("--@sealed") == len(SEALED)
    return source


SOURCE = _annotated()


def _candidates() -> list[Candidate]:
    return [Candidate(f"lic_{i:02d}", f"framing-secret-{i}".encode(),
                      f"lk_framing_key_{i:02d}_xxxxxxxxxxxx".encode()) for i in range(LICENSES)]


@cache
def _copy(i: int, preset: str) -> str:
    rules = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    return LuauProtector().protect(PATH, SOURCE, rules, _candidates()[i].license_secret,
                                   sealing=CONTEXT)


_ENTRY = re.compile(r'entry\("(\w+)","([^"]+)","(\w+)",\w+,i,c,"([^"]+)"\)')


def _literals(i: int) -> tuple[str, str, str, str]:
    """B's program literals, as a one-line hook in B's running game reads them (the same
    program whatever the preset: sealing comes first)."""
    found = _ENTRY.search(_copy(i, "minify"))
    assert found is not None
    return found.group(1), found.group(2), found.group(3), found.group(4)


def _loader(i: int) -> str:
    """B's whole loader statement: a second program, complete."""
    copy = _copy(i, "minify")
    start = copy.index("local __licoreSealedW")
    return copy[start:copy.index(" end end ", start) + len(" end end ")]


def _plant(copy: str, b: int, form: str, top: bool) -> str:
    nonce, cipher, tag, context = _literals(b)
    planted = {
        "comment": f'-- "{nonce}" "{cipher}" "{tag}" "{context}"',
        "strings": f'local _unused = {{"{nonce}", "{cipher}", "{tag}", "{context}"}}',
        "program": _loader(b).replace("__licoreSealed", "__planted"),
        "key": f'local _k = "{_candidates()[b].license_key.decode()}"',  # type: ignore[union-attr]
    }[form]
    return planted + "\n" + copy if top else copy + "\n" + planted


def _trace(text: str) -> Trace:
    return LuauProtector().trace([(PATH, text)], _candidates())


def test_the_reported_attack_a_comment_with_bs_program_names_a_and_lists_b() -> None:
    leaked = _plant(_copy(0, "strong"), 1, "comment", top=False)
    found = _trace(leaked)
    assert found.license_id == "lic_00", found
    assert "lic_01" in found.possibly_planted
    assert any(e.startswith("copies merged, or material planted") and "lic_01" in e
               for e in found.evidence), found


def test_a_program_alone_names_nobody_even_its_owner() -> None:
    """B's loader line alone, pasted into a file with no watermark: nobody is named, and B
    is listed as possibly planted."""
    found = _trace("print('hello')\n" + _loader(3))
    assert found.license_id is None and found.possibly_planted == ("lic_03",), found


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=st.tuples(st.integers(0, COPIES - 1), st.integers(0, COPIES - 1)).filter(
           lambda p: p[0] != p[1]),
       forms=st.lists(st.sampled_from(["comment", "strings", "program", "key"]), min_size=1,
                      max_size=4, unique=True),
       preset=st.sampled_from(["light", "strong"]), top=st.booleans())
def test_planting_bs_material_in_as_copy_never_names_b(
        pair: tuple[int, int], forms: list[str], preset: str, top: bool) -> None:
    a, b = pair
    leaked = _copy(a, preset)
    for form in forms:
        leaked = _plant(leaked, b, form, top)
    found = _trace(leaked)
    ids = [c.license_id for c in _candidates()]
    assert found.license_id in (ids[a], None), (forms, found)
    assert found.license_id != ids[b]
    if found.license_id == ids[a] and set(forms) & {"comment", "strings", "program"}:
        assert ids[b] in found.possibly_planted, (forms, found)
