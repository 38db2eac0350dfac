"""Every operator mistake is one line that names the problem and the fix, a non-zero exit,
and no traceback."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.server import LICORE


def licore(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    return subprocess.run([str(LICORE), *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False,
                          env={**clean, "LICORE_DATA_DIR": str(tmp_path / "data"), **env})


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_bad_database_url(tmp_path: Path) -> None:
    line = one_line_error(licore(tmp_path, "--database", "mysql://u:hunter2@db/x", "migrate"),
                          "sqlite:///", "postgresql://")
    assert "hunter2" not in line


def test_missing_sqlite_folder(tmp_path: Path) -> None:
    one_line_error(licore(tmp_path, "migrate", "--database", "sqlite:///no/such/dir/x.db"),
                   "'no/such/dir'", "does not exist")


def test_unreachable_postgres_fails_fast_and_says_refused(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    one_line_error(licore(tmp_path, "--database", f"postgresql://postgres@127.0.0.1:{port}/x",
                          "migrate"), "refused", "is the server running")


@pytest.mark.postgres
def test_missing_postgres_database_is_named(tmp_path: Path) -> None:
    from tests.conftest import PG_URL, _postgres_or_skip

    _postgres_or_skip()
    url = PG_URL.rsplit("/", 1)[0] + "/licore_no_such_database"
    one_line_error(licore(tmp_path, "--database", url, "migrate"),
                   '"licore_no_such_database" does not exist')


@pytest.mark.parametrize(("name", "value", "words"), [
    ("LICORE_PARTNER_RATE_LIMIT", "abc", ("LICORE_PARTNER_RATE_LIMIT", "whole number", "'abc'")),
    ("LICORE_MAX_UPLOAD_BYTES", "-5", ("LICORE_MAX_UPLOAD_BYTES", "1024 or more")),
    ("LICORE_PUBLIC_URL", "licore.example", ("LICORE_PUBLIC_URL", "https://")),
    # a path belongs in LICORE_ROOT_PATH, so that the two cannot disagree
    ("LICORE_PUBLIC_URL", "https://shop.example/licensing",
     ("LICORE_PUBLIC_URL", "without a path", "LICORE_ROOT_PATH")),
    ("LICORE_ROOT_PATH", "licensing", ("LICORE_ROOT_PATH", "like /licensing", "'licensing'")),
    ("LICORE_ROOT_PATH", "/a/../b", ("LICORE_ROOT_PATH", "like /licensing")),
    ("LICORE_LOG_LEVEL", "LOUD", ("LICORE_LOG_LEVEL", "DEBUG")),
    ("LICORE_KEK", "zz", ("LICORE_KEK", "64 hex digits")),
])
def test_bad_setting_values(tmp_path: Path, name: str, value: str,
                            words: tuple[str, ...]) -> None:
    one_line_error(licore(tmp_path, "migrate", **{name: value}), *words)


def test_config_file_is_read_and_checked(tmp_path: Path) -> None:
    (tmp_path / "licore.toml").write_text('partner_rate_limit = "many"\n')
    one_line_error(licore(tmp_path, "migrate"), "partner_rate_limit", "whole number")
    (tmp_path / "licore.toml").write_text("partner_rate_lmit = 5\n")
    one_line_error(licore(tmp_path, "migrate"), "unknown setting 'partner_rate_lmit'")
    one_line_error(licore(tmp_path, "migrate", LICORE_CONFIG=str(tmp_path / "nope.toml")),
                   "nope.toml", "does not exist")


def test_missing_trace_file(tmp_path: Path) -> None:
    one_line_error(licore(tmp_path, "trace", "leaked.rbxm", "--product", "prd_x"),
                   "leaked.rbxm", "No such file")


def test_port_in_use_is_refused_before_serving(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = licore(tmp_path, "serve", "--port", str(port))
    line = one_line_error(done, f"port {port}", "already in use", "--port")
    assert "serving on" not in done.stderr, line


def test_global_options_before_or_after_the_verb(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    for args in (["--database", url, "migrate"], ["migrate", "--database", url]):
        done = licore(tmp_path, *args)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "x.db").exists()
    assert not (tmp_path / "licore.db").exists()


def test_version(tmp_path: Path) -> None:
    done = licore(tmp_path, "--version")
    assert done.returncode == 0 and done.stdout.startswith("licore 0.")
