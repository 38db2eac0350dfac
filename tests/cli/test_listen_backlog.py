"""The listen backlog is an operator's setting (docs/operators.md), checked like the others."""

from __future__ import annotations

import pytest

from licore_cli import settings


def test_the_backlog_defaults_to_4096_and_can_be_set() -> None:
    empty = {"LICORE_CONFIG": ""}
    assert settings.load(empty).listen_backlog == 4096
    assert settings.load({**empty, "LICORE_LISTEN_BACKLOG": "1024"}).listen_backlog == 1024
    with pytest.raises(settings.SettingsError, match="LICORE_LISTEN_BACKLOG"):
        settings.load({**empty, "LICORE_LISTEN_BACKLOG": "0"})
