"""The SDK's packages are ready to publish (sdk/release.py): one version everywhere, a Wally
manifest the registry takes, the Wally package as `wally publish` would upload it (and that
package installing and requiring in a game), and `npm pack`'s tarball installing into a
roblox-ts project with npm and compiling there."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.sdk.installed import LuauGame, rojo_tree, wally_install
from tests.sdk.test_installed import GAME_PROJECT, MAIN
from tests.sdk.test_roblox_ts import SAMPLE, _npm, compile_script, npm_home, private_project

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sdk" / "luau"


def _release() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release", ROOT / "sdk" / "release.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release = _release()


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "luau"
    shutil.copytree(PACKAGE, copy)
    return copy


def test_one_version_across_module_npm_wally_changelog_readme_and_docs() -> None:
    found = release.versions()
    assert len(set(found.values())) == 1 and None not in found.values(), found
    assert release.version_problems() == []
    version = found["wally.toml"]
    docs = (ROOT / "docs" / "sdk.md").read_text(encoding="utf-8")
    assert set(re.findall(r"licore/licore@([\w.-]+)", docs)) == {version}
    assert set(re.findall(r"licore_licore@([\w.-]+)", docs)) == {version}


def test_a_version_left_behind_is_named(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    npm = json.loads((copy / "package.json").read_text(encoding="utf-8"))
    npm["version"] = "9.9.9"
    (copy / "package.json").write_text(json.dumps(npm), encoding="utf-8")
    problems = release.version_problems(copy)
    assert len(problems) == 1 and "package.json 9.9.9" in problems[0]


def test_the_wally_manifest_holds() -> None:
    assert release.wally_problems() == []


def _edit(field: str, value: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        return re.sub(rf"^{field} = .*$", f"{field} = {value}", text, count=1, flags=re.M)
    return edit


BROKEN: dict[str, tuple[Callable[[str], str], str]] = {
    "upper-case name": (_edit("name", '"Licore/Licore"'), "is not scope/name"),
    "name without scope": (_edit("name", '"licore"'), "is not scope/name"),
    "two-part version": (_edit("version", '"1.0"'), "not a semantic version"),
    "unknown realm": (_edit("realm", '"client"'), "is not one of"),
    "shared realm": (_edit("realm", '"shared"'), "server only"),
    "plain-http registry": (_edit("registry", '"http://example.com/index"'), "https URL"),
    "include naming nothing": (_edit("include", '["src", "docs"]'), "'docs' names nothing"),
    "private": (lambda t: t.replace('realm = "server"', 'realm = "server"\nprivate = true'),
                "marked private"),
    "a dependency": (lambda t: t + 'Promise = "evaera/promise@4.0.0"\n', "no dependency"),
    "a module left out": (lambda t: t.replace('exclude = ["', 'exclude = ["src/SealedVM.luau", "'),
                          "would not hold src/SealedVM.luau"),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_a_broken_wally_manifest_is_refused_with_the_reason(tmp_path: Path, case: str) -> None:
    copy = _copy(tmp_path)
    edit, reason = BROKEN[case]
    manifest = copy / "wally.toml"
    manifest.write_text(edit(manifest.read_text(encoding="utf-8")), encoding="utf-8")
    problems = release.wally_problems(copy)
    assert any(reason in p for p in problems), problems


def test_a_package_without_its_project_file_is_refused(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / "default.project.json").unlink()
    assert any("default.project.json is missing" in p for p in release.wally_problems(copy))


def test_the_wally_package_holds_the_module_and_its_notes_only() -> None:
    data = release.wally_zip()
    assert len(data) < release.WALLY_MAX_BYTES
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = sorted(archive.namelist())
        assert names == sorted(["CHANGELOG.md", "README.md", "default.project.json", "src/",
                                *release.modules(), "wally.toml"])
        assert {"src/init.luau", "src/Hub.luau", "src/SealedVM.luau"} <= set(names)
        for module in release.modules():
            assert archive.read(module) == (PACKAGE / module).read_bytes()
        assert json.loads(archive.read("default.project.json"))["name"] == "licore"
    assert release.wally_file_name() == f"licore_licore@{release.versions()['wally.toml']}.zip"


def test_wally_renames_the_project_after_the_package_and_leaves_hidden_files_out(
        tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    project = json.loads((copy / "default.project.json").read_text(encoding="utf-8"))
    (copy / "default.project.json").write_text(json.dumps({**project, "name": "Other"}),
                                               encoding="utf-8")
    (copy / ".env").write_text("x", encoding="utf-8")
    (copy / "Packages").mkdir()
    (copy / "Packages" / "dep.lua").write_text("return 1", encoding="utf-8")
    with zipfile.ZipFile(io.BytesIO(release.wally_zip(copy))) as archive:
        names = archive.namelist()
        assert json.loads(archive.read("default.project.json"))["name"] == "licore"
    # Wally's `.*` is matched against the path from the package root: a hidden entry there.
    assert ".env" not in names and ".luaurc" not in names
    assert not any(n.startswith("Packages") for n in names)
    assert "index.d.ts" not in names and "package.json" not in names  # the npm side


def test_the_built_wally_package_installs_and_requires_in_a_game(tmp_path: Path) -> None:
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(io.BytesIO(release.wally_zip())) as archive:
        archive.extractall(unpacked)  # noqa: S202 (the archive is the one built above)
    project = tmp_path / "game"
    (project / "src").mkdir(parents=True)
    (project / "default.project.json").write_text(json.dumps(GAME_PROJECT), encoding="utf-8")
    (project / "src" / "Main.server.luau").write_text(MAIN, encoding="utf-8")
    wally_install(unpacked, project, "Licore")
    root = rojo_tree(project)
    assert root is not None
    version, same, _, digest, hub_kit = LuauGame(root).run(
        root.child("ServerScriptService").child("Main"))
    assert version == release.versions()["wally.toml"] and same is True
    assert hub_kit is True  # the published package carries the hub kit
    assert digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_the_command_line_check_passes(tmp_path: Path) -> None:
    assert release.main(["wally", "--out", str(tmp_path)]) == 0
    assert (tmp_path / release.wally_file_name()).read_bytes() == release.wally_zip()


@pytest.mark.slow
def test_npm_pack_builds_a_tarball_a_roblox_ts_project_installs_and_compiles(
        tmp_path: Path) -> None:
    npm = _npm()
    tarball = release.npm_pack(tmp_path / "dist", npm=npm)
    assert release.npm_problems(tarball) == []
    with tarfile.open(tarball) as tar:
        files = sorted(m.name for m in tar.getmembers() if m.isfile())
    assert files == sorted(["package/CHANGELOG.md", "package/README.md",
                            "package/default.project.json", "package/index.d.ts",
                            "package/package.json",
                            *(f"package/{m}" for m in release.modules())])
    assert not list(PACKAGE.glob("*.tgz"))  # npm wrote nothing into the checkout

    # A roblox-ts project of its own, sharing the installed compiler by hard links, that
    # installs the tarball with npm as a user would (`npm install @rbxts/licore`).
    shared = npm_home()
    home = private_project(tmp_path / "game")
    hidden_lock = home / "node_modules" / ".package-lock.json"
    if hidden_lock.exists():  # npm rewrites it: a copy, not a link into the shared one
        hidden_lock.unlink()
        shutil.copy(shared / "node_modules" / ".package-lock.json", hidden_lock)
    result = subprocess.run(
        [npm, "install", "--no-save", "--offline", "--no-audit", "--no-fund",
         "--ignore-scripts", str(tarball)],
        cwd=home, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    installed = home / "node_modules" / "@rbxts" / "licore"
    assert not installed.is_symlink()
    for module in release.modules():
        assert (installed / module).read_bytes() == (PACKAGE / module).read_bytes()
    sample = (SAMPLE / "src" / "server" / "main.server.ts").read_text(encoding="utf-8")
    compiled = compile_script(home, sample)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    out = (home / "out" / "server" / "main.server.luau").read_text(encoding="utf-8")
    assert '"@rbxts", "licore")' in out and "Licore.new({" in out


def test_the_wally_package_is_the_same_bytes_whenever_it_is_built() -> None:
    """No entry carries the clock's time or the checkout's: two builds seconds apart, or on
    two machines, are byte for byte one package."""
    entries = zipfile.ZipFile(io.BytesIO(release.wally_zip())).infolist()
    assert entries and {e.date_time for e in entries} == {(1980, 1, 1, 0, 0, 0)}
