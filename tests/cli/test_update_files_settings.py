"""LICORE_UPDATE_FILES_URL and LICORE_UPDATE_FILES_ACCEL (docs/operators.md): unset by
default, read into the settings the HTTP adapter uses, and a value that is not what each
needs is one line naming it."""

from __future__ import annotations

import pytest

from licore_cli import settings

EMPTY = {"LICORE_CONFIG": ""}


def test_both_are_unset_by_default() -> None:
    core = settings.load(EMPTY).core
    assert (core.update_files_url, core.update_files_accel) == (None, None)


def test_both_are_read() -> None:
    core = settings.load({**EMPTY, "LICORE_UPDATE_FILES_URL": "https://cdn.example/files/",
                          "LICORE_UPDATE_FILES_ACCEL": "/_licore_update_files/"}).core
    assert core.update_files_url == "https://cdn.example/files"  # the name follows a "/"
    assert core.update_files_accel == "/_licore_update_files/"


@pytest.mark.parametrize("given", ["_licore/", "/_licore", "/a b/", "/a\tb/"])
def test_an_accel_location_that_is_not_a_folder_path_is_one_line(given: str) -> None:
    with pytest.raises(settings.SettingsError, match="LICORE_UPDATE_FILES_ACCEL must be"):
        settings.load({**EMPTY, "LICORE_UPDATE_FILES_ACCEL": given})


def test_a_files_url_that_is_not_http_is_one_line() -> None:
    with pytest.raises(settings.SettingsError, match="LICORE_UPDATE_FILES_URL must be"):
        settings.load({**EMPTY, "LICORE_UPDATE_FILES_URL": "ftp://files.example"})
