#!/usr/bin/env python3
"""Bootstrap and run licore with nothing but Python 3.11+ on the machine.

    python3 dev.py serve [licore serve options]   start the service (embedded SQLite)
    python3 dev.py test  [pytest options]         lint, typecheck, import rules, whole test suite

Both create `.venv/` on first use and reinstall only when `pyproject.toml` changes, so the
second run starts at once.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def _ensure_venv(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit("licore needs Python 3.11 or newer")
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f".installed-{extras or 'base'}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    subprocess.run([PY, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    subprocess.run([PY, "-m", "pip", "install", "-q", "-e", target], check=True)
    stamp.write_text(digest)


def _run(*argv: str | Path) -> None:
    print("+", " ".join(str(a) for a in argv), flush=True)
    result = subprocess.run([str(a) for a in argv], cwd=ROOT)
    if result.returncode != 0:
        sys.exit(result.returncode)


def serve(args: list[str]) -> None:
    _ensure_venv("")
    os.execv(BIN / "licore", [str(BIN / "licore"), "serve", *args])


def test(args: list[str]) -> None:
    _ensure_venv("test")
    _run(BIN / "ruff", "check", "src", "tests", "bench", "dev.py", "noxfile.py")
    _run(BIN / "mypy")
    _run(BIN / "lint-imports")
    _run(PY, "-m", "pytest", *args)


def main() -> None:
    commands = {"serve": serve, "test": test}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
