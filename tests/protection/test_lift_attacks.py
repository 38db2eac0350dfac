"""A lifted crack keeps its leaker's mark (docs/protection.md, "A lifted crack"): a buyer who
decrypts their own sealed program with their recorded key, lifts it back to Luau, renames
everything and canonicalises it (operand order, mirrored comparisons, branch inversion,
number forms) is named by the shape of its statements, or the answer is "cannot tell";
colluders who lift and merge name one of them; nobody else is ever named, and pasting
another buyer's lifted program beside one's own lists both."""

from __future__ import annotations

import random

from adapters_protection.luau_protector import LuauProtector
from tests.protection.lift_attack import candidates, lifted, merged
from tests.protection.lifter import lift
from tests.protection.sealed_vm import SealedWorld
from tests.protection.vm import run

LICENSES = 60


def test_every_buyer_gets_a_different_lift_though_they_do_the_same() -> None:
    shop = candidates(3)
    lifts = {lifted(c.license_secret) for c in shop}
    assert len(lifts) == 3  # byte-identical for all buyers before shape marks


def test_a_lifted_canonicalised_crack_names_its_leaker_and_never_another() -> None:
    pool = candidates(LICENSES)
    protector = LuauProtector()
    named = 0
    for owner in pool[:6]:
        found = protector.trace([("Crack.lua", lifted(owner.license_secret))], pool)
        assert found.license_id in (owner.license_id, None), found
        named += found.license_id == owner.license_id
        if found.license_id is not None:
            assert found.evidence[0].startswith("the shape of the code names this license")
    assert named >= 5


def test_the_lift_runs_as_the_original_when_the_check_is_cut() -> None:
    """The crack is real: the lifted functions, handed what the stubs handed them, do what
    the sealed ones did (the lifter is the attacker's, checked here so the attack is too)."""
    source = "\n".join([
        "--@sealed",
        "local function payout(kills) local total = 0 for i = 1, kills do total += i * 3 end "
        "return total end",
        "print(payout(4))",
    ])
    from licore.protection import parse_protection_settings
    from tests.protection.lift_attack import CONTEXT, PATH, program_of
    secret = b"lift-runs"
    copy = LuauProtector().protect(PATH, source, parse_protection_settings(
        {"rules": [{"paths": ["*"], "preset": "minify"}]}), secret, sealing=CONTEXT)
    assert SealedWorld(secret).run(copy) == "30"
    crack = lift(program_of(copy, secret), canonical=True) + "print(sealed1(4))"
    assert run(crack) == "30"


def test_colluders_who_lift_and_merge_name_one_of_them_or_nobody() -> None:
    pool = candidates(LICENSES)
    protector = LuauProtector()
    rng = random.Random(44)
    for size in (2, 3):
        for _ in range(3):
            gang = rng.sample(pool, size)
            crack = merged([lifted(c.license_secret) for c in gang], rng)
            found = protector.trace([("Crack.lua", crack)], pool)
            assert found.license_id in {c.license_id for c in gang} | {None}, found


def test_a_pasted_lift_of_another_buyer_is_listed_beside_the_leaker() -> None:
    """A pastes B's lifted program as dead code beside A's own lift: both are named by
    their marks (copies merged), never B alone."""
    pool = candidates(LICENSES)
    a, b = pool[3], pool[9]
    crack = lifted(a.license_secret) + "\nlocal _ = function()\n" + lifted(
        b.license_secret) + "end\n"
    found = LuauProtector().trace([("Crack.lua", crack)], pool)
    assert found.license_id in (a.license_id, b.license_id, None)
    if found.license_id == b.license_id:
        assert any(a.license_id in e for e in found.evidence), found
