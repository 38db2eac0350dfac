"""Server secrets kept in the data folder (docs/operators.md, the secrets table): made once,
whole, by whichever of several processes starting together comes first, and never read
as a shorter key than they are."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from licore_cli import compose, settings

SRC = str(Path(compose.__file__).resolve().parents[1])
READ = ("import sys; sys.path.insert(0, sys.argv[1]); from licore_cli.compose import secret; "
        "print(secret('session_key', 32).hex())")


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    return {**env, "LICORE_DATA_DIR": str(tmp_path), "LICORE_CONFIG": ""}


def test_processes_starting_together_share_one_whole_key(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", READ, SRC], env=_clean_env(tmp_path),
                              stdout=subprocess.PIPE, text=True) for _ in range(8)]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(keys) == 1 and len(keys.pop()) == 64
    made = tmp_path / "session_key"
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["session_key"]  # no draft left behind


@pytest.mark.parametrize("text", ["", "abcd", "zz" * 32, "00" * 33])
def test_a_secret_file_that_is_not_a_whole_key_is_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # An empty file (a process stopped while making it, a copy gone wrong) was read as an
    # empty session key: cookies signed with it could be forged by anyone.
    for name, value in _clean_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LICORE_SESSION_KEY", raising=False)
    (tmp_path / "session_key").write_text(text)
    with pytest.raises(settings.SettingsError, match="session_key must hold 32 bytes"):
        compose.secret("session_key", 32)
