"""Each buyer's copy is their own: the injected key is never readable with string
encryption on, two licenses get different copies, and one license always the same one."""

import re
import secrets
import string

import pytest

from adapters_protection.luau_protector import LuauProtector
from licore.protection import SAME_FOR_EVERY_LICENSE, TRANSFORMS, parse_protection_settings
from tests.protection.vm import run

PLACEHOLDER = "LICORE_LICENSE_KEY"
TEMPLATE = """
local KEY = "LICORE_LICENSE_KEY"
local LONG = [==[LICORE_LICENSE_KEY]==]
local t = {["LICORE_LICENSE_KEY"] = 1}
local function id(s) return s end
local header = `key={"LICORE_LICENSE_KEY"} inline=LICORE_LICENSE_KEY`
print(#KEY, KEY == LONG, t[KEY], id"LICORE_LICENSE_KEY" == KEY, #header)
print(("LICORE_LICENSE_KEY"):sub(1, 3), string.len('LICORE_LICENSE_KEY'))
"""

Rule = dict[str, object]

ENCRYPTING: dict[str, Rule] = {
    "light": {"preset": "light"},
    "strong": {"preset": "strong"},
    "minify+encrypt_strings": {"preset": "minify", "transforms": ["encrypt_strings"]},
    "encrypt_strings": {"transforms": ["encrypt_strings"]},
    "hoist_constants+encrypt_strings": {"transforms": ["hoist_constants", "encrypt_strings"]},
}
LICENSED: dict[str, Rule] = {  # every rule whose output depends on the license
    "light": {"preset": "light"},
    "strong": {"preset": "strong"},
    "rename_locals": {"transforms": ["rename_locals"]},
    "encrypt_strings": {"transforms": ["encrypt_strings"]},
    "hoist_constants": {"transforms": ["hoist_constants"]},
    "flatten": {"transforms": ["flatten"]},
}


def _key() -> str:
    alphabet = string.ascii_letters + string.digits
    return "lk_" + "".join(secrets.choice(alphabet) for _ in range(40))


def _protect(rule: Rule, source: str, secret: bytes) -> str:
    settings = parse_protection_settings({"rules": [{"paths": ["*"], **rule}]})
    return LuauProtector().protect("Game/Main", source, settings, secret)


@pytest.mark.parametrize("name", sorted(ENCRYPTING))
def test_the_key_is_findable_nowhere_in_the_output(name: str) -> None:
    key = _key()
    source = TEMPLATE.replace(PLACEHOLDER, key)
    out = _protect(ENCRYPTING[name], source, key.encode())
    body = key[3:]
    # not as written, not in pieces, not as byte escapes
    assert body not in out and body[:12] not in out and body[-12:] not in out
    escaped = "".join(f"\\{b}" for b in body[:8].encode())
    assert escaped not in out
    assert not re.search(r"\\x" + r"\\x".join(f"{b:02x}" for b in body[:4].encode()), out, re.I)
    assert run(out) == run(source)


@pytest.mark.parametrize("name", sorted(LICENSED))
def test_two_licenses_get_different_copies_of_the_same_source(name: str) -> None:
    source = TEMPLATE.replace(PLACEHOLDER, "same-text-for-both")
    a = _protect(LICENSED[name], source, b"license-one")
    b = _protect(LICENSED[name], source, b"license-two")
    assert a != b
    assert run(a) == run(b) == run(source)


@pytest.mark.parametrize("preset", ["none", "minify", "light", "strong"])
def test_the_same_license_always_gets_the_same_copy(preset: str) -> None:
    source = TEMPLATE.replace(PLACEHOLDER, _key())
    first = _protect({"preset": preset}, source, b"license-one")
    assert first == _protect({"preset": preset}, source, b"license-one")


def test_minify_alone_depends_only_on_the_source() -> None:
    source = TEMPLATE.replace(PLACEHOLDER, "x")
    assert _protect({"preset": "minify"}, source, b"one") == _protect(
        {"preset": "minify"}, source, b"two")


def test_the_transforms_said_to_be_the_same_for_every_license_are_and_no_other() -> None:
    """Copies reuse a script protected under `SAME_FOR_EVERY_LICENSE` alone for every
    buyer (licore.builds.prepare): each of those must ignore the license, and every other
    transform is keyed by it (or the reuse would be needlessly narrow, or wrong)."""
    source = TEMPLATE.replace(PLACEHOLDER, "same-text-for-both")
    alike = {t for t in TRANSFORMS
             if _protect({"transforms": [t]}, source, b"license-one")
             == _protect({"transforms": [t]}, source, b"license-two")}
    assert alike == SAME_FOR_EVERY_LICENSE
