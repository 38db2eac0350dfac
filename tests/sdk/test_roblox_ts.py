"""The SDK's roblox-ts typings (`sdk/luau/index.d.ts`) compile a sample game script with the
real `roblox-ts` compiler, and refuse a script that misuses the API.

The compiler and Roblox's typings come from npm, pinned by `tests/sdk/rbxts/package-lock.json`,
and are installed once into `.venv/rbxts-<hash of that lock>/` (`npm ci --prefer-offline`, about
half a minute; later runs reuse it, and a fresh checkout on the same machine takes the packages
from npm's own cache without the network). The SDK package is copied in as
`node_modules/@rbxts/licore`, as `npm install path/to/sdk/luau` would place it. Without npm
the tests skip, except under CI=true, where they fail: the npm registry is one the project's
machines and CI reach.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import IN_CI
from tests.support.locks import exclusive

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).with_name("rbxts")
PACKAGE = ROOT / "sdk" / "luau"

pytestmark = pytest.mark.slow

MISUSE = """
import Licore from "@rbxts/licore";
const client = new Licore({ runtimeUrl: "u", productId: "p" });
const n: number = Licore.sha256("abc");
client.unlock(true);
"""


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        if IN_CI:
            pytest.fail("CI=true and npm is not installed")
        pytest.skip("npm is not installed")
    return npm


def npm_home() -> Path:
    """The sample project with its npm packages installed (once per lock file)."""
    npm = _npm()
    lock = (SAMPLE / "package-lock.json").read_bytes()
    home = ROOT / ".venv" / f"rbxts-{hashlib.sha256(lock).hexdigest()[:12]}"
    with exclusive(str(home)):
        _install(npm, home)
    return home


def private_project(home: Path) -> Path:
    """A project of its own at `home` sharing the installed packages by hard links: the
    shared install is never written after `npm ci`, so test workers may use it at once."""
    shared = npm_home()
    home.mkdir(parents=True)
    subprocess.run(["cp", "-al", str(shared / "node_modules"), str(home / "node_modules")],
                   check=True)
    shutil.rmtree(home / "node_modules" / "@rbxts" / "licore", ignore_errors=True)
    for name in ("package.json", "package-lock.json", "tsconfig.json", "default.project.json"):
        shutil.copy(SAMPLE / name, home / name)
    return home


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = private_project(tmp_path_factory.mktemp("rbxts") / "game")
    installed = home / "node_modules" / "@rbxts" / "licore"
    shutil.rmtree(installed, ignore_errors=True)
    installed.mkdir()
    for name in ("src", "index.d.ts", "default.project.json", "package.json"):
        source = PACKAGE / name
        if source.is_dir():
            shutil.copytree(source, installed / name)
        else:
            shutil.copy(source, installed / name)
    return home


def _install(npm: str, home: Path) -> None:
    if (home / ".installed").exists():
        return
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(SAMPLE / name, home / name)
    result = subprocess.run(
        [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"],
        cwd=home,
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (home / ".installed").write_text("ok", encoding="utf-8")


def compile_script(home: Path, script: str) -> subprocess.CompletedProcess[str]:
    for stale in ("src", "out", "include"):
        shutil.rmtree(home / stale, ignore_errors=True)
    (home / "src" / "server").mkdir(parents=True)
    (home / "src" / "server" / "main.server.ts").write_text(script, encoding="utf-8")
    return subprocess.run(
        [str(home / "node_modules" / ".bin" / "rbxtsc")], cwd=home,
        capture_output=True, text=True, timeout=600, check=False)


def test_a_game_script_using_the_typings_compiles(project: Path) -> None:
    sample = (SAMPLE / "src" / "server" / "main.server.ts").read_text(encoding="utf-8")
    result = compile_script(project, sample)
    assert result.returncode == 0, result.stdout + result.stderr
    out = (project / "out" / "server" / "main.server.luau").read_text(encoding="utf-8")
    # The compiled calls are the SDK's: constructor, colon methods, dot functions.
    assert "Licore.new({" in out
    assert "client:unlock()" in out and "client:update(\"1.0\")" in out
    assert "Licore.buildInstances(nodes)" in out and "Licore.sha256(\"abc\")" in out
    # roblox-ts finds the package by the name its project file gives (as Wally's link does).
    assert '"@rbxts", "licore")' in out


def test_a_script_misusing_the_api_is_refused(project: Path) -> None:
    result = compile_script(project, MISUSE)
    assert result.returncode != 0
    errors = result.stdout + result.stderr
    assert "licenseKey" in errors  # a required config field left out
    assert "not assignable to type 'number'" in errors  # sha256 returns a string
