"""What a licensed buyer does to walk away with a crack (for the attack tests and
`bench/lift_attack.py`): record their own sealed-code key, decrypt their copy's sealed
program, lift it back to Luau (`lifter`), canonicalise it, and ship that instead of the
program; colluders merge their lifted programs function by function."""

from __future__ import annotations

import base64
import random
import re
from pathlib import Path

from adapters_protection.luau_protector import LuauProtector
from licore.protection import Candidate, parse_protection_settings
from licore.sealing import open_sealed, sealed_code_key, sealing_context
from tests.protection.lifter import lift

HERE = Path(__file__).resolve().parent
SHOP = (HERE / "realistic" / "shop.luau").read_text()
# The realistic script with every top-level function sealed (`--!sealed`): the product's
# logic, its license check among it, is all in sealed programs.
SEALED_SHOP = "--!sealed\n" + SHOP
CONTEXT = sealing_context("ver_lift", 0)
PATH = "ServerScriptService/Shop"
_ENTRY = re.compile(r'entry\("(\w+)","([^"]+)","(\w+)",\w+,i,c,"([^"]+)"\)')
_MINIFY = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})


def candidates(n: int, tag: str = "lift") -> list[Candidate]:
    return [Candidate(f"lic_{i:03d}", f"{tag}-secret-{i}".encode(),
                      f"lk_{tag}_{i:03d}_xxxxxxxxxxxxxxxx".encode()) for i in range(n)]


def program_of(copy: str, license_secret: bytes) -> bytes:
    """The copy's sealed program, decrypted with the key the buyer's own `/unlock` gave."""
    found = _ENTRY.search(copy)
    assert found is not None, "no sealed program in the copy"
    nonce, cipher, tag, context = found.groups()
    return open_sealed(sealed_code_key(license_secret, context), nonce,
                       base64.b64decode(cipher).hex(), tag)


def lifted(license_secret: bytes, *, canonical: bool = True,
           source: str = SEALED_SHOP) -> str:
    """The buyer's crack: their sealed program lifted back to Luau (and canonicalised)."""
    copy = LuauProtector().protect(PATH, source, _MINIFY, license_secret, sealing=CONTEXT)
    return lift(program_of(copy, license_secret), canonical=canonical)


def functions(text: str) -> list[str]:
    """A lifted program's top-level functions (`local sealedN = function ... end`)."""
    return [f"local sealed{chunk}" for chunk in text.split("local sealed")[1:]]


def merged(texts: list[str], rng: random.Random) -> str:
    """Colluders' lifted programs merged: each function taken from one of them at random."""
    parts = [functions(t) for t in texts]
    return "".join(rng.choice(column) for column in zip(*parts, strict=True))
