"""Tracing a leaked copy to its license: 200 buyers' copies of one product, each with the key
cut out (every string emptied) and reformatted, are each traced to the right license; a copy
made for a license of another product names none. (Renaming, merging, junk and planted
keys: test_trace_attacks.)"""

import random
import re
import secrets
import string

import pytest

from adapters_protection.luau_protector import LuauProtector
from adapters_protection.syntax import Node, parser
from adapters_protection.tracing import trace
from licore.protection import Candidate, parse_protection_settings

PLACEHOLDER = "LICORE_LICENSE_KEY"
PRODUCT = {
    "ServerScriptService/Gun/Main": """
local LICENSE = "LICORE_LICENSE_KEY"
local Players = game and game:GetService("Players")
local damage, fireRate = 25, 0.2
local function hit(target, amount)
  local health = target.health - amount
  if health < 0 then health = 0 end
  target.health = health
  return health
end
local function fire(shooter, targets)
  local total = 0
  for _, target in ipairs(targets) do
    total += damage - hit(target, damage)
  end
  return total, #LICENSE
end
return {fire = fire, rate = fireRate, players = Players}
""",
    "ServerScriptService/Gun/Util": """
local Util = {}
function Util.clamp(value, low, high)
  local result = math.max(low, math.min(high, value))
  return result
end
function Util.lerp(a, b, t)
  local span = b - a
  return a + span * t
end
return Util
""",
}
RULES = parse_protection_settings({"rules": [
    {"names": ["Main"], "preset": "strong"},
    {"paths": ["ServerScriptService/*"], "preset": "light"},
]})


def _key() -> str:
    return "lk_" + "".join(secrets.choice(string.ascii_letters + string.digits)
                           for _ in range(40))


def _copy(key: str) -> list[tuple[str, str]]:
    protector = LuauProtector()
    return [(path, protector.protect(path, source.replace(PLACEHOLDER, key), RULES,
                                     key.encode()))
            for path, source in PRODUCT.items()]


def _tokens(root: Node) -> list[str]:
    """The code's tokens, strings whole, comments dropped."""
    tokens, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            continue
        if node.child_count == 0 or node.type == "string":
            tokens.append((node.text or b"").decode())
        else:
            stack.extend(reversed(node.children))
    return tokens


def _cut_and_reformat(scripts: list[tuple[str, str]], rng: random.Random) -> list[tuple[str, str]]:
    """What a leaker might do: empty every string (the key goes with them), then re-emit the
    code with other whitespace, other line breaks and comments of their own."""
    out = []
    for path, text in scripts:
        emptied = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text, flags=re.DOTALL)
        tokens = _tokens(parser().parse(emptied.encode()).root_node)
        pieces = []
        for token in tokens:
            pieces.append(token)
            pieces.append(rng.choice([" ", "  ", "\n", "\n    ", " --[[ mine ]] ", "\t"]))
        out.append((path.rsplit("/", 1)[-1] + ".lua", "-- cleaned up\n" + "".join(pieces)))
    return out


@pytest.fixture(scope="module")
def buyers() -> dict[str, str]:
    return {f"lic_{i:03d}": _key() for i in range(200)}


def test_every_buyer_copy_traces_to_its_license_without_the_key(buyers: dict[str, str]) -> None:
    candidates = [Candidate(lid, key.encode()) for lid, key in buyers.items()]
    rng = random.Random(7)
    for license_id, key in buyers.items():
        leaked = _cut_and_reformat(_copy(key), rng)
        assert not any(key[3:] in text for _, text in leaked)
        found = trace(leaked, candidates)
        assert found.license_id == license_id
        assert not found.key_found and found.marked_names >= 2
        assert any("carry this license's mark" in e for e in found.evidence)
        assert any("the watermark names this license" in e for e in found.evidence)


def test_a_copy_for_another_products_license_names_nobody(buyers: dict[str, str]) -> None:
    candidates = [Candidate(lid, key.encode()) for lid, key in buyers.items()]
    stranger = _cut_and_reformat(_copy(_key()), random.Random(1))
    found = trace(stranger, candidates)
    assert found.license_id is None
    assert found.evidence[0].startswith("cannot tell: the copy carries ")
    assert trace(_copy(_key()), candidates).license_id is None


def test_the_key_is_evidence_where_it_survives(buyers: dict[str, str]) -> None:
    candidates = [Candidate(lid, key.encode()) for lid, key in buyers.items()]
    license_id, key = next(iter(buyers.items()))
    # strong/light encrypt the key: the protector's tracer still finds it by decoding the
    # literals under each candidate's secret (nothing else can read them)
    found = LuauProtector().trace(_copy(key), candidates)
    assert found.license_id == license_id and found.key_found
    assert any("license key appears in ServerScriptService/Gun/Main" in e
               for e in found.evidence)
    # a copy with no rules at all carries the key as written, and nothing else: a key can
    # be planted, so on its own it names nobody, and its license is possibly planted
    plain = [(path, source.replace(PLACEHOLDER, key)) for path, source in PRODUCT.items()]
    found = trace(plain, candidates)
    assert found.license_id is None and found.possibly_planted == (license_id,)
    assert not found.key_found and found.marked_names == 0
    assert found.evidence[1] == (
        f"possibly planted: the key of {license_id} appears in ServerScriptService/Gun/Main, "
        "line 2, but the copy carries too few watermark positions to confirm any license; "
        "a key is copied as easily as any text, so it names nobody on its own")


def test_evidence_names_the_marked_identifiers_and_where_they_are() -> None:
    key = _key()
    found = trace(_copy(key), [Candidate("lic_x", key.encode())])
    marks = next(e for e in found.evidence if "carry this license's mark" in e)
    assert re.search(r"\w{6,} \(ServerScriptService/Gun/(Main|Util), line \d+\)", marks)


def test_nothing_to_go_on_names_nobody() -> None:
    for scripts in ([("a.lua", "print('hello world')")], []):
        found = trace(scripts, [Candidate("x", b"k" * 43)])
        assert found.license_id is None and found.watermark_positions == 0
        assert found.evidence == ("the copy carries no watermark (no rule with watermark was "
                                  "applied to it, or it was rewritten beyond recognition)",)
