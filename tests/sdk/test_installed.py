"""The SDK package installs and requires as a Wally + Rojo user expects (tests/sdk/installed.py
lays it out as `wally install` does and syncs it by Rojo's rules), and its versions agree."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from tests.sdk.installed import LuauGame, rojo_tree, wally_install

PACKAGE = Path(__file__).resolve().parents[2] / "sdk" / "luau"

GAME_PROJECT = {
    "name": "Game",
    "tree": {
        "$className": "DataModel",
        "ServerScriptService": {
            "$className": "ServerScriptService",
            "ServerPackages": {"$path": "ServerPackages"},
            "Main": {"$path": "src/Main.server.luau"},
        },
    },
}

# What a seller's server Script does first (docs/sdk.md).
MAIN = """
local Licore = require(script.Parent.ServerPackages.Licore)
local again = require(script.Parent.ServerPackages.Licore)
local client = Licore.new({
    runtimeUrl = "https://licore.example.com/runtime/",
    productId = "prod_1",
    licenseKey = "LIC-1",
    newNonce = function() return "0123456789abcdef" end,
    http = function() return false, 0, "" end,
    sleep = function() end,
})
return Licore.VERSION, Licore == again, client.runtimeUrl, Licore.toHex(Licore.sha256("abc")),
    type(Licore.Hub) == "table" and type(Licore.Hub.new) == "function"
"""


def _game(tmp_path: Path, package: Path) -> tuple[LuauGame, object]:
    project = tmp_path / "game"
    (project / "src").mkdir(parents=True)
    (project / "default.project.json").write_text(json.dumps(GAME_PROJECT), encoding="utf-8")
    (project / "src" / "Main.server.luau").write_text(MAIN, encoding="utf-8")
    wally_install(package, project, "Licore")
    root = rojo_tree(project)
    assert root is not None
    return LuauGame(root), root


def _version() -> str:
    manifest = tomllib.loads((PACKAGE / "wally.toml").read_text(encoding="utf-8"))
    return str(manifest["package"]["version"])


def test_the_installed_package_requires_from_a_server_script(tmp_path: Path) -> None:
    game, root = _game(tmp_path, PACKAGE)
    sss = root.child("ServerScriptService")  # type: ignore[attr-defined]
    # Rojo syncs the package root as the module itself, as Wally's link expects.
    index = sss.child("ServerPackages").child("_Index")
    package = index.child(f"licore_licore@{_version()}").child("licore")
    assert package.class_name == "ModuleScript"
    assert package.source == (PACKAGE / "src" / "init.luau").read_text(encoding="utf-8")
    version, same, url, digest, hub_kit = game.run(sss.child("Main"))
    assert version == _version()
    assert same is True  # one module value for every require
    assert url == "https://licore.example.com/runtime"
    assert digest == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    # The hub kit comes with the package as its child module, reached as Licore.Hub.
    assert package.child("Hub").class_name == "ModuleScript"
    assert hub_kit is True


def test_without_a_project_file_the_package_is_a_folder_and_require_fails(
        tmp_path: Path) -> None:
    # The 0.1.0 layout: the link module then points at a Folder, as the issue saw it.
    bare = tmp_path / "bare"
    shutil.copytree(PACKAGE, bare)
    (bare / "default.project.json").unlink()
    game, root = _game(tmp_path, bare)
    main = root.child("ServerScriptService").child("Main")  # type: ignore[attr-defined]
    with pytest.raises(Exception, match="invalid argument"):
        game.run(main)


def test_versions_agree_across_manifest_module_changelog_and_typings() -> None:
    version = _version()
    source = (PACKAGE / "src" / "init.luau").read_text(encoding="utf-8")
    assert re.search(rf'VERSION = "{re.escape(version)}"', source)
    changelog = (PACKAGE / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (\S+)", changelog, re.M)[0] == version
    npm = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    assert npm["version"] == version


def test_the_project_file_maps_the_package_root_to_the_module() -> None:
    project = json.loads((PACKAGE / "default.project.json").read_text(encoding="utf-8"))
    assert project["tree"] == {"$path": "src"}
    # Whether a tool names the synced module after its folder (Wally's `_Index/.../licore`)
    # or after the project (roblox-ts's resolver), the name is the same.
    manifest = tomllib.loads((PACKAGE / "wally.toml").read_text(encoding="utf-8"))
    assert project["name"] == manifest["package"]["name"].split("/")[1]
    assert (PACKAGE / "src" / "init.luau").is_file()
