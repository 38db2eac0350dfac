"""check(): a script a rule cannot transform safely blocks publishing, naming script and line;
protect() refuses the same script instead of returning a half-protected copy."""

from pathlib import Path

import pytest

import adapters_protection.luau_protector as luau_protector
from adapters_protection.luau_protector import LuauProtector
from licore.protection import ProtectionFailed, parse_protection_settings
from tests.protection.vm import run

STRONG = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.luau"))


# Values are tables, not constants: Luau folds constant locals away, and they would not count
# towards its limits of 200 locals and 200 upvalues per function.
def _locals(n: int) -> str:
    names = [f"v{i}" for i in range(n)]
    return f"local {', '.join(names)} = {', '.join(['{}'] * n)}\nprint(#{names[-1]}, 'x')\n"


def _upvalues(n: int) -> str:
    """A function capturing `n` upvalues, half from the top level, half from its parent."""
    half = n // 2
    top = [f"local u{i} = {{{i}}}" for i in range(half)]
    mid = [f"  local u{i} = {{{i}}}" for i in range(half, n)]
    used = " + ".join(f"u{i}[1]" for i in range(n))
    return "\n".join([*top, "local function outer()", *mid,
                      f"  local function inner() return {used} end", "  return inner()",
                      "end", "print(outer(), 'x')", ""])


BLOCKED = {
    "syntax": ("local x = 1\nlocal function (\n", 2, "syntax error"),
    "ambiguous": ("local f = print\nlocal g = f\n(f)('x')\n", 3, "ambiguous syntax"),
    "escape": ('local a = "fine"\nlocal b = "\\300"\n', 2, "decimal escape"),
    "top_level_locals": (_locals(199), 1, "199 locals"),
}


@pytest.mark.parametrize("name", sorted(BLOCKED))
def test_blocking_problems_name_the_script_and_line(name: str) -> None:
    source, line, words = BLOCKED[name]
    path = f"ServerScriptService/{name}"
    problems = LuauProtector().check([("Workspace/Fine", "print(1)"), (path, source)], STRONG)
    assert [(p.path, p.line, p.blocking) for p in problems] == [(path, line, True)]
    assert words in problems[0].message
    assert str(problems[0]).startswith(f"{path}, line {line}: ")
    with pytest.raises(ProtectionFailed) as failure:
        LuauProtector().protect(path, source, STRONG, b"license")
    assert failure.value.problems == tuple(problems)


def test_a_function_at_the_upvalue_limit_is_blocked() -> None:
    problems = LuauProtector().check([("S/Up", _upvalues(199))], STRONG)
    assert [(p.line, p.blocking) for p in problems] == [(201, True)]  # `inner`
    assert "199 upvalues" in problems[0].message


def test_the_limits_are_luaus() -> None:
    assert "exceeded limit 200" in run(_locals(201))
    assert "exceeded limit 200" in run(_upvalues(201))


def test_scripts_just_inside_the_limits_are_protected_and_still_run() -> None:
    for source in (_locals(198), _upvalues(198)):
        assert LuauProtector().check([("S/Edge", source)], STRONG) == []
        out = LuauProtector().protect("S/Edge", source, STRONG, b"license")
        assert run(out) == run(source)
        assert not run(source).startswith("syntax error")


def test_rules_that_need_no_scopes_are_not_blocked_by_scope_limits() -> None:
    minify = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})
    assert LuauProtector().check([("S/Many", _locals(199))], minify) == []


def test_getfenv_is_a_note_not_a_block() -> None:
    source = "local a = 1\nlocal e = getfenv(1)\nsetfenv(1, e)\nprint(a)"
    problems = LuauProtector().check([("S/Env", source)], STRONG)
    assert [(p.line, p.blocking) for p in problems] == [(2, False), (3, False)]
    assert "local names are kept" in problems[0].message
    assert run(LuauProtector().protect("S/Env", source, STRONG, b"k")) == run(source)


def test_the_whole_corpus_passes_the_check() -> None:
    scripts = [(p.stem, p.read_text()) for p in CORPUS]
    blocking = [p for p in LuauProtector().check(scripts, STRONG) if p.blocking]
    assert blocking == []


def test_a_protector_fault_blocks_publishing_instead_of_reaching_a_buyer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulate a fault in the last transform: its output no longer parses.
    monkeypatch.setattr(luau_protector, "strip", lambda data, root: data + b"\nlocal = =")
    # (strip before watermark goes through `stripped`, which also says where tokens went)
    monkeypatch.setattr(luau_protector, "stripped",
                        lambda data, root: (data + b"\nlocal = =", lambda at, end: at))
    source = "local x = 1\nprint(x)\n"
    problems = LuauProtector().check([("S/Main", source)], STRONG)
    assert [(p.path, p.blocking) for p in problems] == [("S/Main", True)]
    assert "protector fault" in problems[0].message
    with pytest.raises(ProtectionFailed):
        LuauProtector().protect("S/Main", source, STRONG, b"license")
