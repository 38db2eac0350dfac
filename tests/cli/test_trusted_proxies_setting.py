"""LICORE_TRUSTED_PROXIES: comma-separated networks, none by default, one clear line for a
mistake."""

from __future__ import annotations

import ipaddress

import pytest

from licore_cli import settings

EMPTY = {"LICORE_CONFIG": ""}


def test_trusted_proxies_are_none_by_default_and_read_as_networks() -> None:
    assert settings.load(EMPTY).trusted_proxies == ()
    loaded = settings.load({**EMPTY, "LICORE_TRUSTED_PROXIES": "127.0.0.1/32, 10.0.0.0/8,::1"})
    assert loaded.trusted_proxies == (ipaddress.ip_network("127.0.0.1/32"),
                                      ipaddress.ip_network("10.0.0.0/8"),
                                      ipaddress.ip_network("::1/128"))


def test_a_wrong_network_is_one_line_naming_it() -> None:
    with pytest.raises(settings.SettingsError,
                       match=r"LICORE_TRUSTED_PROXIES: 'nginx' is not a network.*10.0.0.0/8"):
        settings.load({**EMPTY, "LICORE_TRUSTED_PROXIES": "127.0.0.1/32,nginx"})
