"""The SDK, every module of it, type-checks clean in strict mode with the Luau type checker
(`luau-analyze`, built from Luau release 735, in the shared tools folder), and keeps clear of
what would slow the game: getfenv/setfenv/loadstring switch off Luau's fast paths for the
whole environment.

Without the checker the test skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import IN_CI
from tests.support.shared import SHARED

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sdk" / "luau"
INIT = PACKAGE / "src" / "init.luau"
# The entry module and its children (the hub kit among them), each checked by itself.
MODULES = sorted((PACKAGE / "src").glob("*.luau"))
ANALYZE = SHARED / "tools" / "luau" / "luau-analyze"


def _analyzer() -> Path:
    if not ANALYZE.is_file():
        reason = f"luau-analyze is not at {ANALYZE}"
        if IN_CI:
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    return ANALYZE


def test_the_module_type_checks_in_strict_mode_with_no_error() -> None:
    # Run from the package folder so its .luaurc (strict, the Roblox global names) applies.
    result = subprocess.run(
        [str(_analyzer()), "--mode=strict", *(f"src/{m.name}" for m in MODULES)],
        cwd=PACKAGE, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (result.stdout + result.stderr).strip() == ""


def test_the_example_hub_type_checks_in_strict_mode_with_no_error() -> None:
    hub = ROOT / "examples" / "hub"
    scripts = sorted(str(p.relative_to(hub)) for p in (hub / "src").rglob("*.luau"))
    assert len(scripts) == 3
    result = subprocess.run(
        [str(_analyzer()), "--mode=strict", *scripts],
        cwd=hub, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (result.stdout + result.stderr).strip() == ""


def test_the_checker_reports_errors_it_finds(tmp_path: Path) -> None:
    """The check above would fail on a type error: a wrong-typed line is reported."""
    copy = tmp_path / "luau"
    shutil.copytree(PACKAGE, copy)
    init = copy / "src" / "init.luau"
    init.write_text(init.read_text(encoding="utf-8").replace(
        'VERSION = "', 'VERSION = 1 + "', 1), encoding="utf-8")
    result = subprocess.run(
        [str(_analyzer()), "--mode=strict", "src/init.luau"],
        cwd=copy, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert "TypeError" in result.stdout + result.stderr


def test_the_entry_module_requires_each_of_its_children() -> None:
    """Every child module is reached from the entry module, so the checker and the VM tests,
    which load the package through it, cover each one."""
    names = {m.stem for m in MODULES} - {"init", "Hub"}
    assert len(names) >= 8
    reached: set[str] = set()
    todo = ["init"]
    while todo:
        source = (PACKAGE / "src" / f"{todo.pop()}.luau").read_text(encoding="utf-8")
        for name in re.findall(r'require\("(?:@self|\.)/(\w+)"\)', source):
            if name not in reached:
                reached.add(name)
                todo.append(name)
    assert reached == names


@pytest.mark.parametrize("path", MODULES, ids=[m.stem for m in MODULES])
def test_the_module_is_strict_and_never_touches_the_function_environment(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.startswith("--!strict\n")
    code = re.sub(r"--.*", "", source)  # the comments may name them
    for deoptimizing in ("getfenv", "setfenv", "loadstring"):
        assert deoptimizing not in code


def _generator() -> ModuleType:
    path = ROOT / "sdk" / "tools" / "unroll_sha256.py"
    spec = importlib.util.spec_from_file_location("unroll_sha256", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_unrolled_sha256_is_what_its_generator_writes() -> None:
    source = INIT.with_name("Hashing.luau").read_text(encoding="utf-8")
    assert _generator().spliced(source) == source
