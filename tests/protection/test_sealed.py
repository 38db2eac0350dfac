"""Sealed functions in the real Luau VM: the same behaviour as the original, and nothing to
run without the license's key (docs/protection.md, "Sealed functions")."""

from __future__ import annotations

import base64
import contextlib
import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from adapters_protection.analysis import analyse
from adapters_protection.fingerprint import DEFAULT_SECRET, bias_key
from adapters_protection.luau_protector import LuauProtector
from adapters_protection.sealed import seal_functions
from adapters_protection.syntax import parser, walk
from licore.protection import (
    Candidate,
    ProtectionFailed,
    parse_protection_settings,
    settings_document,
)
from licore.sealing import open_sealed, sealed_code_key
from tests.protection.luau_programs import programs
from tests.protection.sealed_vm import SealedWorld
from tests.protection.vm import run

HERE = Path(__file__).resolve().parent
SEALED_CORPUS = sorted((HERE / "sealed_corpus").glob("*.luau"))
# Every program of the protector's corpus with every function declaration sealed, but the
# one whose point is getfenv (refused: see test_getfenv_users_are_refused).
CORPUS = [p for p in sorted((HERE / "corpus").glob("*.luau")) if p.stem != "getfenv_user"]
SECRET_A, SECRET_B = b"license-secret-A", b"license-secret-B"
NO_LICENSE = "licore: sealed code needs a live license"
def annotate(source: str) -> str:
    """`source` with `--@sealed` above every function declaration."""
    data = source.encode()
    root = parser().parse(data).root_node
    starts = sorted({n.start_byte for n in walk(root) if n.type == "function_declaration"},
                    reverse=True)
    for start in starts:
        line_start = data.rfind(b"\n", 0, start) + 1
        data = data[:line_start] + b"--@sealed\n" + data[line_start:]
    return data.decode()


def wrapped(source: str) -> str:
    """`source` as the body of one sealed function the script calls (its `--!` lines kept
    on top), so the whole program runs sealed."""
    lines = source.split("\n")
    top = 0
    while top < len(lines) and lines[top].startswith("--!"):
        top += 1
    head, body = lines[:top], "\n".join(lines[top:])
    return "\n".join([*head, "--@sealed", "local function main(...)", body, "end",
                      "return main(...)"])


_BIAS = bias_key(DEFAULT_SECRET)


def sealed_copy(source: str, secret: bytes = SECRET_A, path: str = "Game/Script") -> str:
    """The script sealed as a buyer's copy is: its functions in the shapes the license's
    code bits ask for (`shape`), so every behaviour test below runs reshaped code too."""
    data = source.encode()
    root = parser().parse(data).root_node
    return seal_functions(data, root, analyse(root), secret, path, shaped=_BIAS).decode()


@cache
def _world(secret: bytes) -> SealedWorld:
    return SealedWorld(secret)


def _annotated(program: Path) -> str:
    source = program.read_text()
    return source if program.parent.name == "sealed_corpus" else annotate(source)


# A corpus program that declares no function has nothing to seal one by one; the
# whole-program test below seals every corpus program.
WITH_FUNCTIONS = [p for p in SEALED_CORPUS + CORPUS if "--@sealed" in _annotated(p)]


@pytest.mark.parametrize("program", WITH_FUNCTIONS, ids=lambda p: p.stem)
def test_sealed_functions_behave_as_the_original(program: Path) -> None:
    source = program.read_text()
    copy = sealed_copy(_annotated(program))
    assert "__licoreSealed(1," in copy
    assert _world(SECRET_A).run(copy) == run(source)


@pytest.mark.parametrize("program", CORPUS, ids=lambda p: p.stem)
def test_sealed_whole_programs_behave_as_the_original(program: Path) -> None:
    source = program.read_text()
    copy = sealed_copy(wrapped(source))
    assert "__licoreSealed(1," in copy and "local function main" not in copy
    assert _world(SECRET_A).run(copy) == run(source)


def test_the_sealed_corpus_covers_the_hard_parts() -> None:
    text = "\n".join(p.read_text() for p in SEALED_CORPUS)
    for needle in ("coroutine.wrap", "coroutine.yield", "select(\"#\"", "__index", "__newindex",
                   "__call", "__eq", "__lt", "__concat", "pairs(", "ipairs(", "for k, v in t",
                   "-0.0", "0/0", "2^53", "//", "%", "`hello {", "pcall", "error(", "xpcall",
                   "continue", "repeat"):
        assert needle in text, needle


def test_errors_keep_the_original_line() -> None:
    """error() and assert() at level 1, and Luau's own errors caught by pcall in the script
    or raised out of a sealed function its stub called, name the script and line."""
    source = "\n".join([
        "--@sealed",
        "local function f(k)",
        "  if k == 1 then",
        "    error('boom')",
        "  end",
        "  assert(k ~= 2, 'bad two')",
        "  assert(k ~= 3)",
        "  if k == 4 then",
        "    local t = nil",
        "    return t.x",
        "  end",
        "  error('lvl0', 0)",
        "end",
        "for k = 1, 5 do print(pcall(f, k)) end",
        "print(f(4))",
    ])
    expected = "\n".join(["false script:4: boom", "false script:6: bad two",
                          "false script:7: assertion failed!",
                          "false script:10: attempt to index nil with 'x'", "false lvl0",
                          "error: script:10: attempt to index nil with 'x'"])
    assert _world(SECRET_A).run_exact(sealed_copy(source)) == expected


_SECRET_FUNCTION = """
local salt = 7
--@sealed
local function priceOf(item)
  local table_of_prices = {sword = 120, shield = 75}
  return (table_of_prices[item] or 0) * salt + #"ZEPHYR_FORMULA_31337"
end
print(priceOf("sword"), priceOf("shield"))
"""


def test_without_a_live_license_nothing_runs() -> None:
    copy = sealed_copy(_SECRET_FUNCTION.replace("local table_of_prices",
                                                "print('ran')\n  local table_of_prices"))
    refused = SealedWorld(None)
    out = refused.run(copy)
    assert "ran" not in out
    assert out == f"error: script:?: {NO_LICENSE}"
    wrong = SealedWorld(SECRET_B).run(copy)  # another license's key opens nothing
    assert wrong == f"error: script:?: {NO_LICENSE}"
    assert SealedWorld(SECRET_A).run(copy) == "ran\nran\n860 545"


def test_each_buyer_gets_a_different_program_that_only_their_key_opens() -> None:
    copies = {s: sealed_copy(_SECRET_FUNCTION, s) for s in (SECRET_A, SECRET_B, b"third")}
    blobs = {s: re.search(r'entry\("(\w+)","([^"]+)","(\w+)"', c) for s, c in copies.items()}
    plain = {}
    for secret, found in blobs.items():
        assert found is not None
        nonce, cipher, tag = found.groups()
        cipher_hex = base64.b64decode(cipher).hex()
        plain[secret] = open_sealed(sealed_code_key(secret), nonce, cipher_hex, tag)
        for other in copies:
            if other != secret:
                with pytest.raises(Exception, match="tag"):
                    open_sealed(sealed_code_key(other), nonce, cipher_hex, tag)
        assert _world(secret).run(copies[secret]) == "860 545"
    # The programs differ (tag numbering and string encoding), not only their encryption.
    assert len(set(plain.values())) == 3
    assert all(b"ZEPHYR" not in p and b"sword" not in p for p in plain.values())


def test_static_decoding_of_the_copy_yields_nothing_of_the_sealed_function() -> None:
    copy = sealed_copy(_SECRET_FUNCTION)
    words = ("ZEPHYR_FORMULA_31337", "table_of_prices", "sword", "shield", "120")
    candidates = [copy.encode()]
    for literal in re.findall(r'"([A-Za-z0-9+/=]{16,})"', copy):
        for decode in (base64.b64decode, bytes.fromhex):
            with contextlib.suppress(ValueError):
                candidates.append(decode(literal))
    for blob in candidates:
        for word in words[:2]:
            assert word.encode() not in blob
    assert "table_of_prices" not in copy and "ZEPHYR" not in copy and "120" not in copy


def test_the_key_is_fetched_once_per_server() -> None:
    world = SealedWorld(SECRET_A)
    copy = sealed_copy(_SECRET_FUNCTION)
    for _ in range(3):
        assert world.run(copy) == "860 545"
    assert world.unlocks == 1


def test_protect_seals_annotated_functions_under_every_preset() -> None:
    source = annotate((HERE / "sealed_corpus" / "closures_loops.luau").read_text())
    for preset in ("minify", "light", "strong"):
        settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
        out = LuauProtector().protect("Game/Script", source, settings, SECRET_A)
        assert "shared_count" not in out and "fs[#fs + 1]" not in out
        assert _world(SECRET_A).run(out) == run(source)


def test_settings_seal_every_top_level_function_of_listed_scripts() -> None:
    raw = {"rules": [{"paths": ["*"], "preset": "light"}], "sealed": ["Game/Mod*"]}
    settings = parse_protection_settings(raw)
    assert settings_document(settings) == raw
    assert parse_protection_settings(settings_document(settings)) == settings
    source = (HERE / "sealed_corpus" / "recursion_shadowing.luau").read_text().replace(
        "--@sealed\n", "")
    sealed = LuauProtector().protect("Game/Module", source, settings, SECRET_A)
    plain = LuauProtector().protect("Game/Other", source, settings, SECRET_A)
    assert "LicoreSealed" in sealed and "LicoreSealed" not in plain
    assert _world(SECRET_A).run(sealed) == run(source)
    with pytest.raises(Exception, match=r"protection\.sealed"):
        parse_protection_settings({"sealed": [""]})


def test_getfenv_users_and_unsealable_code_are_refused_at_publish() -> None:
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
    getfenv_user = "--@sealed\nlocal function f() return getfenv(1) end\nprint(f())"
    problems = LuauProtector().check([("Game/A", getfenv_user)], settings)
    assert any("cannot be sealed" in p.message and p.blocking for p in problems)
    with pytest.raises(ProtectionFailed, match="getfenv"):
        LuauProtector().protect("Game/A", getfenv_user, settings, SECRET_A)
    many_names = "--@sealed\nlocal function f(t)\n  for a, b, c, d, e in t do end\nend"
    problems = LuauProtector().check([("Game/B", many_names)], settings)
    assert [(p.line, p.blocking) for p in problems] == [(3, True)]


def _candidates(n: int) -> list[Candidate]:
    return [Candidate(f"lic_{i}", f"license-secret-{i}".encode(), f"KEY-{i}-{'x' * 20}".encode())
            for i in range(n)]


def _deobfuscated(copy: str) -> str:
    """What a thorough de-obfuscator leaves of a working copy: every identifier it does
    not need renamed, comments and layout gone, junk appended; the sealed program's
    literals (which the copy needs to run) kept."""
    words = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", re.sub(r'"[^"]*"', "", copy))))
    keep = {"local", "function", "end", "return", "if", "then", "not", "error", "shared",
            "LicoreSealed", "entry", "debug", "info", "print", "for", "do", "in", "and",
            "or", "else", "elseif", "nil", "true", "false", "while", "repeat", "until",
            "table", "string", "math", "ipairs", "pairs", "tostring", "setmetatable"}
    renamed = copy
    for i, word in enumerate(words):
        if word not in keep:
            renamed = re.sub(rf"\b{word}\b", f"v{i}", renamed)
    return re.sub(r"--[^\n]*", "", renamed) + "\n" + "-- junk\n" * 5000


def test_a_working_leak_is_named_by_its_marks_and_its_program_only_agrees() -> None:
    """A working leak of a `light` copy, padded with junk: its watermark names the buyer,
    and the sealed program it must keep to run agrees."""
    candidates = _candidates(6)
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
    protector = LuauProtector()
    for owner in candidates[:3]:
        copy = protector.protect("Game/Shop", _SECRET_FUNCTION, settings,
                                 owner.license_secret)
        leak = copy + "\n" + "-- junk\n" * 5000
        assert SealedWorld(owner.license_secret).run(leak) == "860 545"  # it still works
        traced = protector.trace([("Shop.lua", leak)], candidates)
        assert traced.license_id == owner.license_id, traced
        assert traced.evidence[0].startswith("the watermark names this license")
        assert any("sealed program" in e and "agrees with its marks" in e
                   for e in traced.evidence), traced


def test_a_program_alone_names_nobody() -> None:
    """A `minify` copy carries no watermark: its sealed program, which anyone could have
    pasted there, is listed as possibly planted and names nobody."""
    candidates = _candidates(6)
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})
    protector = LuauProtector()
    owner = candidates[2]
    copy = protector.protect("Game/Shop", _SECRET_FUNCTION, settings, owner.license_secret)
    traced = protector.trace([("Shop.lua", _deobfuscated(copy))], candidates)
    assert traced.license_id is None
    assert traced.possibly_planted == (owner.license_id,)
    assert any(e.startswith("possibly planted: the copy holds a sealed program")
               for e in traced.evidence), traced
    # A copy without sealed code says nothing of programs.
    plain = protector.protect("Game/Shop", _SECRET_FUNCTION.replace("--@sealed\n", ""),
                              settings, candidates[0].license_secret)
    assert "sealed program" not in " ".join(protector.trace([("S", plain)], candidates).evidence)


def test_forcing_the_visible_check_leaves_the_sealed_function_unable_to_run() -> None:
    """The check a seller keeps visible (`/check`, forgeable) can be cut out of a copy with
    one regex; what the product needs, sealed, still asks `/unlock` for its key."""
    source = "\n".join([
        "local licensed = (shared.licensed == true)  -- the visible, forgeable check",
        "if not licensed then print('unlicensed'); return end",
        "--@sealed",
        "local function payout(kills) return kills * 25 + 5 end",
        "print(payout(4))",
    ])
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
    copy = LuauProtector().protect("Game/Rewards", source, settings, SECRET_A)
    cut = re.sub(r"if not \w+ then print\(", "if false then print(", copy)  # forced
    assert cut != copy
    assert SealedWorld(None).run(copy) == "unlicensed"
    assert SealedWorld(None).run(cut) == f"error: script:?: {NO_LICENSE}"
    assert SealedWorld(SECRET_A).run(cut) == "105"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs())
def test_random_programs_sealed_whole_and_by_function_keep_behaviour(source: str) -> None:
    original = run(source)
    assert not original.startswith("syntax error"), original
    assert _world(SECRET_A).run(sealed_copy(wrapped(source))) == original
    annotated = annotate(source)
    if "--@sealed" in annotated:
        assert _world(SECRET_A).run(sealed_copy(annotated)) == original


@pytest.mark.parametrize("preset", ["light", "strong"])
def test_every_license_gets_a_working_sealed_copy_under_each_preset(preset: str) -> None:
    source = annotate((HERE / "sealed_corpus" / "metatables.luau").read_text())
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    expected = run(source)
    copies = set()
    for i in range(4):
        secret = f"license-secret-{i}".encode()
        copy = LuauProtector().protect("Game/Vectors", source, settings, secret)
        copies.add(copy)
        assert SealedWorld(secret).run(copy) == expected
        assert SealedWorld(SECRET_B).run(copy) == f"error: script:?: {NO_LICENSE}"
    assert len(copies) == 4


def test_a_sealed_directive_seals_every_top_level_function_of_the_script() -> None:
    module = "\n".join([
        "--!sealed",
        "local M = {}",
        "function M.double(x) return x * 2 end",
        "function M.name() return 'module' end",
        "local function helper(s) return s .. '!' end",
        "print(M.double(21), helper(M.name()))",
    ])
    copy = sealed_copy(module)
    assert "x * 2" not in copy and "'module'" not in copy and "'!'" not in copy
    assert copy.count("__licoreSealed(") == 4  # the loader and the three stubs
    assert _world(SECRET_A).run(copy) == "42 module!"


def test_traced_right_after_deobfuscation_and_never_an_innocent() -> None:
    """Working leaks, de-obfuscated, renamed and padded, of random licenses among 12: each
    is named right; a copy whose program no longer opens (it does not run) and which
    carries another license's key names nobody on the program's account."""
    import random

    rng = random.Random(7)
    candidates = _candidates(12)
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
    protector = LuauProtector()
    right = 0
    for _ in range(10):
        owner, other = rng.sample(candidates, 2)
        copy = protector.protect("Game/Shop", _SECRET_FUNCTION, settings, owner.license_secret)
        leak = _deobfuscated(copy) + f"\nlocal planted = {(other.license_key or b'').decode()!r}"
        right += protector.trace([("Leak.lua", leak)], candidates).license_id == owner.license_id
        broken = re.sub(r'"([0-9a-f]{64})"', lambda m: '"' + "0" * 64 + '"', leak)
        assert protector.trace([("Leak.lua", broken)], candidates).license_id != other.license_id
    assert right == 10


def test_a_script_that_may_seal_is_never_taken_as_the_same_for_every_license() -> None:
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}],
                                          "sealed": ["Game/Api"]})
    annotated = "--@sealed\nlocal function f() return 1 end\nprint(f())"
    assert settings.may_seal("Game/Script", annotated)
    assert settings.may_seal("Game/Api", "local M = {} function M.f() end return M")
    assert not settings.may_seal("Game/Script", "print(1)")
    assert not parse_protection_settings({}).may_seal("Game/Script", annotated)
    copies = {LuauProtector().protect("Game/Script", annotated, settings, s)
              for s in (SECRET_A, SECRET_B)}
    assert len(copies) == 2  # minify alone, yet one copy per license
