"""encrypt_strings hides the license key, varies per license and is deterministic."""

import secrets
import string

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.protection.test_luau_protector import _run

LIGHT = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
TEMPLATE = (
    'local KEY = "LICORE_KEY_PLACEHOLDER"\n'
    'print(#KEY, KEY:sub(1, 3), [[x\\y]], "\\x41\\u{42}\\z\n  C")\n'
)


def _key() -> str:
    alphabet = string.ascii_letters + string.digits
    return "lk_" + "".join(secrets.choice(alphabet) for _ in range(40))


def test_key_is_not_findable_and_output_is_equivalent() -> None:
    key = _key()
    source = TEMPLATE.replace("LICORE_KEY_PLACEHOLDER", key)
    out = LuauProtector().protect("G/Main", source, LIGHT, b"secret-1")
    assert key not in out and key[3:] not in out
    assert _run(out) == _run(source)


def test_licenses_differ_and_same_license_is_identical() -> None:
    source = TEMPLATE.replace("LICORE_KEY_PLACEHOLDER", _key())
    p = LuauProtector()
    a = p.protect("G/Main", source, LIGHT, b"secret-1")
    assert a == p.protect("G/Main", source, LIGHT, b"secret-1")
    assert a != p.protect("G/Main", source, LIGHT, b"secret-2")
