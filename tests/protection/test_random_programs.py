"""Random well-formed programs behave the same in the Luau VM before and after each preset."""

import pytest
from hypothesis import HealthCheck, given, settings

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.protection.luau_programs import programs
from tests.protection.vm import run

PROTECTOR = LuauProtector()


@pytest.mark.parametrize("preset", ["minify", "light", "strong"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs())
def test_random_program_keeps_behaviour(preset: str, source: str) -> None:
    rules = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    original = run(source)
    assert not original.startswith("syntax error"), original
    out = PROTECTOR.protect("Game/Random", source, rules, b"license-secret")
    assert run(out) == original
