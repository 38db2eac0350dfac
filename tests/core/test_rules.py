"""Unit tests of the pure core: tables, scopes, product rules, token shapes."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from enum import Enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_http.decoding import structure
from licore import (
    api_keys,
    device_flow,
    licenses,
    products,
    releases,
    scopes,
    tokens,
    transitions,
)
from licore.commands import CreateProduct
from licore.errors import InvalidRequest, InvalidScope, LicoreError, NotFound
from licore.transitions import Event


@pytest.mark.parametrize(("table", "states", "events", "none"), [
    (device_flow.DEVICE_FLOW, device_flow.DeviceState, device_flow.DeviceEvent,
     device_flow.DeviceState.NONE),
    (licenses.LICENSES, licenses.LicenseState, licenses.LicenseEvent, licenses.LicenseState.NONE),
    (api_keys.API_KEYS, api_keys.KeyState, api_keys.KeyEvent, None),
    (products.VISIBILITY, products.Visibility, products.VisibilityEvent,
     products.Visibility.NONE),
    (releases.RELEASES, releases.Release, releases.ReleaseEvent, None),
])
def test_every_table_answers_every_state_and_event(
        table: Mapping[tuple[Enum, Event], object], states: type[Enum],
        events: type[Event], none: Enum | None) -> None:
    """A row for each pair, except that a creating event reaches only the "none" state."""
    expected = {(state, event) for state, event in itertools.product(states, events)
                if not event.creates or state is none}
    assert set(table) == expected


def test_license_table_rows_of_the_specification() -> None:
    S, E, Fx = licenses.LicenseState, licenses.LicenseEvent, licenses.LicenseEffect
    assert licenses.transition(S.NONE, E.GRANT).next is S.ACTIVE
    assert licenses.transition(S.INACTIVE, E.GRANT).effects == (
        Fx.MINT_KEY, Fx.QUEUE_CHAT_ROLE_HAND_OUT)
    assert licenses.transition(S.ACTIVE, E.REVOKE).effects == (
        Fx.CLEAR_KEY, Fx.QUEUE_CHAT_ROLE_REMOVAL)
    assert licenses.transition(S.INACTIVE, E.PURCHASE_PASS).next is S.INACTIVE
    with pytest.raises(LicoreError, match="already holds"):
        licenses.transition(S.ACTIVE, E.GRANT)


def test_a_row_written_twice_is_refused() -> None:
    S, E = licenses.LicenseState, licenses.LicenseEvent
    with pytest.raises(ValueError, match="two rows"):
        transitions.table((S.NONE, E.GRANT, transitions.Go(S.ACTIVE)),
                          (S.NONE, E.GRANT, transitions.Go(S.PAUSED)))


def test_scope_rules() -> None:
    registered = ("products:read", "library:read", "library:download")
    assert scopes.requestable(("library:read", "library:download"), registered) == (
        "library:read", "library:download")
    assert scopes.requestable(("products:read", "products:write"), registered) == (
        "products:read",)
    with pytest.raises(InvalidScope):
        scopes.requestable(("products:read", "library:read"), registered)
    with pytest.raises(InvalidScope):
        scopes.requestable(("packages:write",), registered)
    with pytest.raises(InvalidScope):
        scopes.requestable(("nonsense",), registered)
    helper = scopes.Grantable(frozenset({scopes.Permission.MANAGE_LICENSES}))
    assert helper.filter(("products:read", "licenses:read")) == ("licenses:read",)
    assert scopes.Grantable(frozenset()).filter(("library:read",)) == ("library:read",)


@pytest.mark.parametrize(("title", "slug"), [
    ("Über Sword", "uber-sword"), ("Tom's Gun", "toms-gun"), ("  A  --  B  ", "a-b"),
    ("!!!", "product"), ("日本語", "product"), ("Café_Racer v2.0", "cafe-racer-v2-0"),
])
def test_slugs(title: str, slug: str) -> None:
    assert products.slug_base(title) == slug


@given(st.text(max_size=200))
def test_slugs_are_always_well_formed(title: str) -> None:
    slug = products.slug_base(title)
    assert slug and slug == slug.strip("-") and "--" not in slug
    assert all(c.isascii() and (c.isdigit() or c.islower() or c == "-") for c in slug)


def test_product_lengths_count_code_points() -> None:
    emoji_title = "🗡" * 80  # 80 code points, 320 UTF-8 bytes
    assert CreateProduct(emoji_title).title == emoji_title
    with pytest.raises(InvalidRequest) as e:
        CreateProduct("🗡" * 81)
    assert e.value.field == "title"


@pytest.mark.parametrize("price", [True, False, 5.0, "5", None, -1, 1_000_001])
def test_price_must_be_a_json_integer_in_range(price: object) -> None:
    with pytest.raises(InvalidRequest) as e:
        structure({"title": "x", "price_credit": price}, CreateProduct)
    assert e.value.field == "price_credit"


def test_visibility_moves_both_ways_and_creates_are_drafts() -> None:
    V, VE = products.Visibility, products.VisibilityEvent
    assert products.transition(V.NONE, VE.CREATE).next is V.DRAFT
    assert products.transition(V.DRAFT, VE.LIST).next is V.LISTED
    assert products.transition(V.LISTED, VE.UNLIST).next is V.DRAFT
    assert products.transition(V.LISTED, VE.EDIT).next is V.LISTED
    with pytest.raises(NotFound):
        products.transition(V.NONE, VE.LIST)


@given(st.binary(min_size=64, max_size=64))
def test_api_key_shape_and_checksum(random: bytes) -> None:
    key = tokens.make_api_key(scopes.KeyKind.STUDIO, random)
    assert key.startswith("lcs_") and tokens.api_key_shape_ok(key)
    broken = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert not tokens.api_key_shape_ok(broken)


@given(st.binary(min_size=64, max_size=64))
def test_license_key_format(random: bytes) -> None:
    key = tokens.make_license_key(random)
    assert key.startswith("lk_") and len(key) == 43 and key[3:].isalnum() and key.isascii()


def test_user_codes() -> None:
    assert device_flow.normalize_user_code("bcdf-ghjk") == "BCDFGHJK"
    assert device_flow.normalize_user_code(" BCDF GHJK ") == "BCDFGHJK"
    assert device_flow.is_well_formed_user_code("BCDFGHJK")
    assert not device_flow.is_well_formed_user_code("ABCDEFGH")  # vowels never appear
