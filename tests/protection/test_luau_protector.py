"""The tree-sitter protector: checks name script and line; strip keeps behaviour."""

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.protection.vm import run

MINIFY = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})

PROGRAM = """-- header comment
local s = "--not a comment" --[==[ long
comment ]==] local t = [[--kept]]
print(s, t, 7 // 2) --[[ x ]] print(#s)
"""


def test_strip_removes_comments_but_not_strings() -> None:
    out = LuauProtector().protect("A/Main", PROGRAM, MINIFY, b"k")
    assert "header" not in out and "long" not in out
    assert "--not a comment" in out and "[[--kept]]" in out


def test_strip_keeps_vm_output() -> None:
    out = LuauProtector().protect("A/Main", PROGRAM, MINIFY, b"k")
    assert run(out) == run(PROGRAM)


def test_check_names_script_and_line() -> None:
    problems = LuauProtector().check(
        [("A/Fine", "local x = 1\nprint(getfenv())"), ("A/Bad", "local x\nlocal = =\n")],
        MINIFY)
    assert [(p.path, p.line, p.blocking) for p in problems] == [("A/Bad", 2, True)]
    assert str(problems[0]).startswith("A/Bad, line 2: syntax error")


def test_unmatched_and_excluded_scripts_are_returned_unchanged() -> None:
    settings = parse_protection_settings(
        {"rules": [{"paths": ["Game/*"], "preset": "strong"}], "exclude": ["Placeholder"]})
    p = LuauProtector()
    source = "local x = 1 -- note\nprint(x)"
    assert p.protect("Other/Main", source, settings, b"k") == source
    assert p.protect("Game/Placeholder", source, settings, b"k") == source
    assert p.protect("Game/Main", source, settings, b"k") != source


def test_strip_collapses_whitespace_but_never_inside_strings() -> None:
    source = (
        "-- header comment\n"
        "local   s  =  'two  spaces'   --[[ inline ]]  local t = [[\n  long   text\n]]\n"
        "\n\n        local u = `a  {s}  b`\n"
        "    print( s ,t,   u )\n"
    )
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})
    out = LuauProtector().protect("Game/S", source, settings, b"k")
    assert "--" not in out and "comment" not in out
    assert "'two  spaces'" in out and "[[\n  long   text\n]]" in out and "`a  {s}  b`" in out
    assert "\n\n" not in out and "    " not in out.replace("long   text", "")
    assert run(out) == run(source)
