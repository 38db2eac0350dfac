"""The server Script docs/sdk.md gives sellers to paste compiles in the real Luau VM and uses
only calls the SDK has."""

from __future__ import annotations

import re
from pathlib import Path

from tests.sdk.luau_sdk import LuauSdk

DOC = Path(__file__).resolve().parents[2] / "docs" / "sdk.md"


def _script() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A complete server Script", 1)[1]
    match = re.search(r"```lua\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_documented_script_compiles() -> None:
    sdk = LuauSdk()
    sdk.lua.load_chunk(_script(), "ProductLoader")  # raises on a syntax error


def test_the_documented_script_calls_only_what_the_sdk_exports() -> None:
    script = _script()
    sdk = LuauSdk()
    methods = set(re.findall(r"client:(\w+)\(", script))
    client = sdk.client(lambda url, body: (False, 0, ""), license_key="k", nonces=[])
    assert methods == {"unlock", "latestVersion", "update", "check"}
    assert all(client.get(m) is not None for m in methods)
    for name in re.findall(r"Licore\.(\w+)\(", script):
        assert sdk.module.get(name) is not None, name
