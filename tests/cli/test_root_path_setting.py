"""LICORE_ROOT_PATH: the path the service is served under, empty by default; the public URL
is an origin."""

from __future__ import annotations

import pytest

from licore_cli import settings

EMPTY = {"LICORE_CONFIG": ""}


@pytest.mark.parametrize(("given", "read"), [
    ("", ""), ("/", ""), ("/licensing", "/licensing"), ("/licensing/", "/licensing"),
    ("/shop/licensing", "/shop/licensing"), ("/a-b_c.d~e", "/a-b_c.d~e"),
])
def test_root_path_is_read_without_its_trailing_slash(given: str, read: str) -> None:
    assert settings.load({**EMPTY, "LICORE_ROOT_PATH": given}).root_path == read


def test_root_path_is_empty_by_default() -> None:
    assert settings.load(EMPTY).root_path == ""


@pytest.mark.parametrize("given", ["licensing", "/a//b", "/a/../b", "/a b", "/a?b", "/a#b",
                                   "//elsewhere"])
def test_a_root_path_that_is_not_a_path_is_one_line(given: str) -> None:
    with pytest.raises(settings.SettingsError, match=r"LICORE_ROOT_PATH must be a path"):
        settings.load({**EMPTY, "LICORE_ROOT_PATH": given})


@pytest.mark.parametrize("given", ["https://shop.example", "https://shop.example/",
                                   "http://127.0.0.1:8000"])
def test_the_public_url_is_an_origin(given: str) -> None:
    assert settings.load({**EMPTY, "LICORE_PUBLIC_URL": given}).public_url == given.rstrip("/")


@pytest.mark.parametrize("given", ["https://shop.example/licensing", "https://shop.example/?a=1"])
def test_a_public_url_with_a_path_names_root_path(given: str) -> None:
    with pytest.raises(settings.SettingsError, match=r"without a path.*LICORE_ROOT_PATH"):
        settings.load({**EMPTY, "LICORE_PUBLIC_URL": given})
