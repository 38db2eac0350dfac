"""Finding and ordering the store's listed products (licore.products.browse)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from licore.commands import BrowseStore
from licore.errors import InvalidRequest
from licore.model import Product
from licore.products import browse


def product(pid: str, title: str, price: int, created: int, tagline: str = "") -> Product:
    return Product(pid, "std_1", pid, title, tagline, "", price, True, True, created, created)


LISTED = [(product("prd_1", "Épée Longue", 300, 30, "a sword"), "Forge"),
          (product("prd_2", "axe", 100, 10), "Forge"),
          (product("prd_3", "Bow", 300, 20, "ranged"), "Hunters")]


def ids(found: list[tuple[Product, str]]) -> list[str]:
    return [p.id for p, _ in found]


def test_every_word_is_found_in_title_tagline_or_studio_case_and_accents_aside() -> None:
    assert ids(browse(LISTED, "EPEE sword", "title")) == ["prd_1"]
    assert ids(browse(LISTED, "hunters", "title")) == ["prd_3"]
    assert ids(browse(LISTED, "forge", "title")) == ["prd_2", "prd_1"]
    assert ids(browse(LISTED, "forge ranged", "title")) == []


def test_each_order() -> None:
    assert ids(browse(LISTED, "", "title")) == ["prd_2", "prd_3", "prd_1"]
    assert ids(browse(LISTED, "", "newest")) == ["prd_1", "prd_3", "prd_2"]
    assert ids(browse(LISTED, "", "price")) == ["prd_2", "prd_3", "prd_1"]
    assert ids(browse(LISTED, "", "price_desc")) == ["prd_1", "prd_3", "prd_2"]


@given(st.text(max_size=30), st.sampled_from(["title", "newest", "price", "price_desc"]))
def test_a_search_only_ever_narrows_and_never_invents(q: str, sort: str) -> None:
    found = browse(LISTED, q, sort)
    assert set(ids(found)) <= set(ids(LISTED))
    assert len(set(ids(found))) == len(found)


@pytest.mark.parametrize("fields", [{"sort": "cheapest"}, {"q": "x" * 101}, {"sort": ""}])
def test_a_bad_query_is_refused_naming_the_field(fields: dict[str, str]) -> None:
    with pytest.raises(InvalidRequest) as refused:
        BrowseStore(**fields)
    assert refused.value.field in fields
