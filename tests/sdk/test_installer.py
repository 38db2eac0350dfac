"""The Studio installer plugin (sdk/installer) without a server: it type-checks clean in strict
mode, keeps clear of getfenv, syncs by Rojo's rules into a plugin whose `Licore` module is the
SDK package itself (not a copy), and loads in the VM with the toolbar button and widget Studio
shows. The scenarios against a real server are in tests/http/test_installer_e2e.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI
from tests.sdk.installer_vm import INSTALLER, StudioVM, call
from tests.support.shared import SHARED

ANALYZE = SHARED / "tools" / "luau" / "luau-analyze"
SOURCES = sorted((INSTALLER / "src").glob("*.luau"))


def analyze(folder: Path = INSTALLER) -> str:
    """luau-analyze's report on every source of the plugin (empty when clean)."""
    if not ANALYZE.is_file():
        reason = f"luau-analyze is not at {ANALYZE}"
        if IN_CI:
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    files = [str(p.relative_to(folder)) for p in sorted((folder / "src").glob("*.luau"))]
    result = subprocess.run([str(ANALYZE), "--mode=strict", *files], cwd=folder,
                            capture_output=True, text=True, timeout=300, check=False)
    report = (result.stdout + result.stderr).strip()
    assert (result.returncode == 0) == (report == ""), report
    return report


def test_every_source_type_checks_in_strict_mode_with_no_error() -> None:
    assert analyze() == ""


def test_the_checker_reports_a_type_error_in_the_plugin(tmp_path: Path) -> None:
    copy = tmp_path / "sdk"
    shutil.copytree(INSTALLER, copy / "installer")
    shutil.copytree(INSTALLER.parent / "luau", copy / "luau")
    source = copy / "installer" / "src" / "Installer.luau"
    text = source.read_text(encoding="utf-8")
    source.write_text(text.replace('local SCOPE = "', 'local SCOPE: number = "', 1),
                      encoding="utf-8")
    assert "TypeError" in analyze(copy / "installer")


def test_every_source_is_strict_and_never_touches_the_function_environment() -> None:
    assert SOURCES
    for path in SOURCES:
        source = path.read_text(encoding="utf-8")
        assert source.startswith("--!strict\n"), path.name
        code = re.sub(r"--.*", "", source)
        for deoptimizing in ("getfenv", "setfenv", "loadstring"):
            assert deoptimizing not in code, path.name


def test_the_rojo_project_syncs_the_sdk_package_as_the_licore_module() -> None:
    vm = StudioVM()
    try:
        licore = vm.node("Licore")
        assert licore.class_name == "ModuleScript"
        assert licore.source == (INSTALLER.parent / "luau" / "src" / "init.luau").read_text(
            encoding="utf-8")
        assert vm.node("Main").class_name == "Script"
        for module in ("Installer", "View", "Config"):
            assert vm.node(module).class_name == "ModuleScript"
        # The disk-only link for the type checker is not part of the plugin.
        project = json.loads((INSTALLER / "default.project.json").read_text(encoding="utf-8"))
        assert "src/Licore.luau" not in json.dumps(project)
    finally:
        vm.close()


def test_the_plugin_loads_with_its_toolbar_button_and_a_hidden_widget() -> None:
    vm = StudioVM(config={"serverUrl": "http://127.0.0.1:9", "clientId": "app_x"})
    try:
        widget = vm.start()
        made = vm.plugin.get("made")
        toolbar = made.get("toolbars").get(1)
        assert toolbar.get("Name") == "licore"
        button = toolbar.get("buttons").get(1)
        assert button.get("Name") == "LicoreInstaller"
        assert widget.get("Enabled") is False
        call(button.get("Click"), "Fire")
        assert widget.get("Enabled") is True
        # Signed out: only "Sign in" is offered, and nothing asks for a key to be pasted.
        assert vm.visible(widget, "SignIn")
        for hidden in ("SignOut", "Refresh", "Library", "Link", "UserCode"):
            assert not vm.visible(widget, hidden)
        assert vm.text(widget, "Status") == "Sign in to see your library."
        root = vm.find(widget, "Root")
        boxes = [c for c in _all(root) if c.get("ClassName") == "TextBox"]
        assert [b.get("Name") for b in boxes] == ["Link"]
        assert boxes[0].get("TextEditable") is False
    finally:
        vm.close()


def test_an_unreachable_server_is_said_plainly() -> None:
    vm = StudioVM(config={"serverUrl": "http://127.0.0.1:9", "clientId": "app_x"})
    try:
        widget = vm.start()
        vm.click(vm.find(widget, "SignIn"))
        assert vm.text(widget, "Status").startswith("Could not reach the licore server")
        assert vm.visible(widget, "SignIn")
    finally:
        vm.close()


def _all(root: Any) -> list[Any]:
    from tests.sdk.installer_vm import call, items

    return items(call(root, "GetDescendants"))
