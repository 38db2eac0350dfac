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


SELLING = DOC.with_name("selling.md")
HUB = Path(__file__).resolve().parents[2] / "sdk" / "luau" / "src" / "Hub.luau"


def test_the_selling_guides_luau_compiles() -> None:
    sdk = LuauSdk()
    blocks = re.findall(r"```lua\n(.*?)```", SELLING.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2
    # The catalog rows are table fields: compiled inside a table constructor.
    sdk.lua.load_chunk("return {" + blocks[0] + "}", "catalog")
    sdk.lua.load_chunk("local Licore, LICORE_URL, SECRET_NAME = ...\n" + blocks[1], "hub")


def test_the_selling_guide_documents_every_option_the_kit_takes_and_no_other() -> None:
    source = HUB.read_text(encoding="utf-8")
    config = source.split("export type Config = {", 1)[1].split("\n}", 1)[0]
    declared = set(re.findall(r"^\t(\w+):", config, re.M))
    # What only tests and other hosts pass (Roblox's services, clock, sleep, ...) is left out.
    internal = {"httpService", "marketplace", "players", "enum", "now", "clock", "sleep",
                "spawn", "random"}
    table = SELLING.read_text(encoding="utf-8").split("## The kit's options", 1)[1]
    documented = set(re.findall(r"`(\w+)`", "\n".join(
        line.split("|")[1] for line in table.splitlines() if line.startswith("| `"))))
    assert documented == declared - internal
