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
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


# What `python3 dev.py test` took last measured, on a clean clone (docs/performance.md).
MEASURED = "measured 2026-12-07 on a clean clone: 11 minutes on 2 cores, 3,835 tests"


def _ensure_venv(extras: str) -> None:
    if sys.version_info < (3, 11):
        sys.exit("licore needs Python 3.11 or newer")
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    stamp = VENV / f".installed-{extras or 'base'}"
    if stamp.exists() and stamp.read_text() == digest:
        return
    # Say what the silent minute is for: pip -q prints nothing while it downloads.
    started = time.monotonic()
    if not PY.exists():
        _say(f"first run: creating {VENV.name}/ and installing licore"
             f"{' with its test tools' if extras else ''} (1-3 minutes, once)")
        venv.EnvBuilder(with_pip=True).create(VENV)
    else:
        _say("pyproject.toml changed: updating the installed packages")
    subprocess.run([PY, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    subprocess.run([PY, "-m", "pip", "install", "-q", "-e", target], check=True)
    stamp.write_text(digest)
    _say(f"installed in {time.monotonic() - started:.0f} s")


def _say(text: str) -> None:
    print(f"dev.py: {text}", file=sys.stderr, flush=True)


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
    started = time.monotonic()
    workers = os.environ.get("LICORE_TEST_WORKERS") or str((os.cpu_count() or 1) + 2)
    _say(f"lint, types, import rules, then the whole suite in {workers} workers "
         f"({MEASURED})")
    _run(BIN / "ruff", "check", "src", "tests", "bench", "dev.py", "noxfile.py")
    # The suite starts several hundred Python processes (servers, `licore` commands), each
    # importing licore's own modules. Where PYTHONDONTWRITEBYTECODE is set (as on the CI
    # machine) no process writes their bytecode, so every one compiled them afresh: 0.15 s of
    # CPU a process. compileall writes it once (only what changed since the last run).
    subprocess.run([str(PY), "-m", "compileall", "-q", "src"], cwd=ROOT, check=True)
    # mypy and the import rules run beside the suite rather than before it: alone, mypy's
    # 20-odd seconds of one core (a fresh clone has no cache) left the other core idle.
    # Their output is held back and printed after pytest's, and either failing fails the run.
    checks = [_start(BIN / "mypy"), _start(BIN / "lint-imports")]
    # Whole modules to a worker (their servers start once), the longest first
    # (tests/support/ordering.py). Two more workers than cores: much of an end-to-end test
    # is waiting (for a server process, an outbox's back-off, pip), and with one more the
    # 2-core machine still sat idle a sixth of a run (1,058 CPU-seconds in 644 s).
    # --no-loadscope-reorder: xdist otherwise reorders modules by their number of tests,
    # which sent the one-test wheel install (a minute of pip) last, with the other workers idle.
    pytest = ["-m", "pytest", "-n", workers, "--dist", "loadfile", "--no-loadscope-reorder"]
    print("+", PY, *pytest, *args, flush=True)
    suite = subprocess.run([str(PY), *pytest, *args], cwd=ROOT)
    failed = [name for name, ok in (_finish(c) for c in checks) if not ok]
    if suite.returncode != 0:
        sys.exit(suite.returncode)
    if failed:
        sys.exit(f"dev.py: {', '.join(failed)} failed (output above)")
    _say(f"all checks passed in {time.monotonic() - started:.0f} s")


def _start(program: Path) -> tuple[str, subprocess.Popen[bytes]]:
    return program.name, subprocess.Popen([str(program)], cwd=ROOT, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT)


def _finish(check: tuple[str, subprocess.Popen[bytes]]) -> tuple[str, bool]:
    name, process = check
    output, _ = process.communicate()
    print(f"+ {name}\n{output.decode(errors='replace')}", end="", flush=True)
    return name, process.returncode == 0


def main() -> None:
    commands = {"serve": serve, "test": test}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
