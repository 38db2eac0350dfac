"""How many processes protect a big build's scripts at once is the operator's setting
(docs/operators.md, `LICORE_PROTECT_PROCESSES`), and it reaches the protector the
composition root makes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from licore_cli import compose, settings

EMPTY = {"LICORE_CONFIG": ""}


def test_one_process_per_core_up_to_8_unless_set_from_0_to_64() -> None:
    assert settings.load(EMPTY).protect_processes == min(os.cpu_count() or 1, 8)
    for given, wanted in (("3", 3), ("0", 0), ("1", 1), ("64", 64)):
        loaded = settings.load({**EMPTY, "LICORE_PROTECT_PROCESSES": given})
        assert loaded.protect_processes == wanted
    for bad in ("-1", "65", "all"):
        with pytest.raises(settings.SettingsError, match="LICORE_PROTECT_PROCESSES"):
            settings.load({**EMPTY, "LICORE_PROTECT_PROCESSES": bad})


def test_the_composed_protector_spreads_over_that_many(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in (("CONFIG", ""), ("DATA_DIR", str(tmp_path / "data")),
                        ("DATABASE_URL", f"sqlite:///{tmp_path / 'licore.db'}"),
                        ("PROTECT_PROCESSES", "3")):
        monkeypatch.setenv(f"LICORE_{name}", value)
    deps = compose.deps_from_env()
    assert deps.protector.processes == 3  # type: ignore[attr-defined]
    assert not deps.protector.started  # type: ignore[attr-defined]  # until a big build
