"""Parsing a seller's protection JSON into settings values."""

import pytest

from licore.protection import (
    PRESETS,
    ProtectionSettingsError,
    parse_protection_settings,
)


def test_preset_and_extra_transforms_are_combined() -> None:
    s = parse_protection_settings(
        {"rules": [{"paths": ["Workspace/*"], "preset": "minify",
                    "transforms": ["encrypt_strings"]}]}
    )
    assert s.transforms_for("Workspace/Gun") == {"strip", "encrypt_strings"}


def test_first_matching_rule_wins_and_unmatched_is_identity() -> None:
    s = parse_protection_settings(
        {"rules": [{"names": ["Main"], "preset": "strong"},
                   {"paths": ["*"], "preset": "minify"}]}
    )
    assert s.transforms_for("A/Main") == PRESETS["strong"]
    assert s.transforms_for("A/Other") == PRESETS["minify"]
    assert parse_protection_settings({}).transforms_for("A/Main") == frozenset()


def test_exclusions_stay_untransformed() -> None:
    s = parse_protection_settings(
        {"rules": [{"paths": ["*"], "preset": "strong"}], "exclude": ["Placeholder"]}
    )
    assert s.transforms_for("Game/Placeholder") == frozenset()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([], "protection"),
        ({"rules": {}}, "protection.rules"),
        ({"rules": [{"names": ["a"], "preset": "max"}]}, "protection.rules[0].preset"),
        ({"rules": [{"names": ["a"], "transforms": ["x"]}]}, "protection.rules[0].transforms[0]"),
        ({"rules": [{"preset": "light"}]}, "protection.rules[0]"),
        ({"rules": [{"names": "a"}]}, "protection.rules[0].names"),
        ({"exclude": [1]}, "protection.exclude"),
        ({"colour": 1}, "protection.colour"),
    ],
)
def test_bad_input_names_the_field(raw: object, field: str) -> None:
    with pytest.raises(ProtectionSettingsError) as info:
        parse_protection_settings(raw)
    assert info.value.field == field
    assert isinstance(info.value, ValueError)
