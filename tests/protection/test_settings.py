"""Parsing a seller's protection JSON into settings values, and writing them back."""

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from licore.protection import (
    DEFAULT_RULES,
    DEFAULT_RULES_JSON,
    PRESETS,
    TRANSFORMS,
    ProtectionSettingsError,
    parse_protection_settings,
    settings_document,
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


def test_the_default_rules_are_the_text_migrations_wrote() -> None:
    assert parse_protection_settings(json.loads(DEFAULT_RULES_JSON)) == DEFAULT_RULES


@given(st.fixed_dictionaries({}, optional={
    "rules": st.lists(st.fixed_dictionaries(
        {"paths": st.lists(st.sampled_from(["*", "A/*", "B"]), min_size=1, max_size=2)},
        optional={"names": st.lists(st.sampled_from(["Main", "Util"]), min_size=1),
                  "preset": st.sampled_from(sorted(PRESETS)),
                  "transforms": st.lists(st.sampled_from(sorted(TRANSFORMS)), min_size=1)}),
        max_size=3),
    "exclude": st.lists(st.sampled_from(["Config", "A/Keep"]), min_size=1, max_size=2)}))
def test_settings_read_back_in_the_sellers_words(document: dict[str, Any]) -> None:
    """What a seller sends comes back as the same settings, and as the same document up to
    the `rules` key an empty document gains."""
    settings = parse_protection_settings(document)
    shown = settings_document(settings)
    assert parse_protection_settings(shown) == settings
    assert shown == {"rules": [], **document}
