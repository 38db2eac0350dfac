"""LICORE_IPV6_PREFIX: the bits of an IPv6 address that name its source for the per-address
limits, 64 by default, from 32 to 128, one clear line for a mistake; the use cases count by
it (the counting itself: tests/core/test_signin_limits.py, tests/http/test_source_limits_e2e.py)."""

from __future__ import annotations

import pytest

from adapters_storage import MemoryStorage
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore_cli import settings
from tests.support.fakes import make_deps

EMPTY = {"LICORE_CONFIG": ""}


def test_the_prefix_is_64_by_default_and_reaches_every_per_address_limit() -> None:
    assert settings.load(EMPTY).core.ipv6_prefix == 64
    core = settings.load({**EMPTY, "LICORE_IPV6_PREFIX": "48"}).core
    assert core.ipv6_prefix == 48
    deps: Deps = make_deps(MemoryStorage(), settings=core)
    cases = UseCases.of(deps)
    assert cases.sessions.ipv6_prefix == 48
    assert cases.runtime.limits.ipv6_prefix == 48
    assert cases.device.settings.ipv6_prefix == 48


@pytest.mark.parametrize("wrong", ["16", "129", "sixty-four"])
def test_a_prefix_out_of_range_is_one_line_naming_it(wrong: str) -> None:
    with pytest.raises(settings.SettingsError,
                       match=r"LICORE_IPV6_PREFIX must be a whole number from 32 to 128"):
        settings.load({**EMPTY, "LICORE_IPV6_PREFIX": wrong})
