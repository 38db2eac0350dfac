"""Luau syntax newer than tree-sitter-luau 1.2.0: every form the Luau VM accepts is
protected under every preset (from a copy with its types erased) and runs the same; the
check lists what was erased as notes, never as a reason to refuse."""

from pathlib import Path

import pytest

from adapters_protection.luau_protector import LuauProtector
from adapters_protection.syntax import first_syntax_error, parser
from adapters_protection.typeless import erase_types
from licore.protection import parse_protection_settings
from tests.protection.vm import run

FORMS = {
    "attribute native": "@native\nfunction f(x) return x + 1 end\nprint(f(1))",
    "attribute on a local function": "@native local function f(x) return x + 1 end\nprint(f(1))",
    "attribute checked": "@checked function f(x) return x + 1 end\nprint(f(1))",
    "attribute deprecated": "@deprecated function f(x) return x + 1 end\nprint(f(1))",
    "attribute on a function expression": "local f = @native function(x) return x * 2 end\n"
                                          "print(f(2))",
    "typeof in a local's annotation": "local y = 1\nlocal x: typeof(y) = 2\nprint(x)",
    "typeof in a parameter's annotation": "local y = 1\nlocal function f(a: typeof(y)) "
                                          "return a end\nprint(f(5))",
    "typeof in a return annotation": "local y = 1\nlocal function f(): typeof(y) return 1 end\n"
                                     "print(f())",
    "typeof in a cast": "local y = 1\nlocal x = y :: typeof(y)\nprint(x)",
    "read property": "type T = {read x: number}\nlocal t: T = {x = 1}\nprint(t.x)",
    "write property": "type T = {write x: number}\nlocal t: T = {x = 1}\nprint(t.x)",
    "default generic parameter": "type T<A = number> = {v: A}\nlocal t: T = {v = 1}\nprint(t.v)",
    "generic default in a function type": "type F<T = string> = (T) -> T\n"
                                          "local f: F = function(s) return s end\nprint(f('q'))",
    "pack default": "type T<A... = ...number> = (A...) -> ()\n"
                    "local f: T = function(...) end\nprint(1)",
    "generic type-pack function": "local function f<T...>(...: T...): T... return ... end\n"
                                  "print(f(1, 2))",
    "generic pack alias": "type T<A, B...> = (A, B...) -> ()\nprint(1)",
    "generic function type with a pack": "type F = <T...>(T...) -> T...\nprint(1)",
    "type function": "type function id(t) return t end\ntype X = id<number>\n"
                     "local x: X = 1\nprint(x)",
    "exported type function": "export type function id(t) return t end\nprint(2)",
    "leading |": "type T =\n| \"a\"\n| \"b\"\nlocal t: T = \"a\"\nprint(t)",
    "leading | in parentheses": "type T = (\n| number\n| string)?\nlocal x: T = 1\nprint(x)",
    "leading &": "type A = {a: number}\ntype T = & A & {b: number}\n"
                 "local t: T = {a = 1, b = 2}\nprint(t.a)",
    "; in a table type": "type T = {a: number; b: string}\nlocal t: T = {a = 1, b = 'x'}\n"
                         "print(t.b)",
    "0x_ff": "print(0x_ff, 0b_1010, 1_000)",
    "annotated for variable": "for i: number = 1, 2 do print(i) end",
    "a cast still cuts results to one": "local y = 1\nlocal a: typeof(y) = 0\n"
                                        "local function f() return 1, 2 end\n"
                                        "print(f() :: any, (f()), a)",
}
PRESETS = ("minify", "light", "strong")


@pytest.mark.parametrize("form", FORMS)
def test_a_modern_form_is_protected_and_runs_the_same(form: str) -> None:
    source = FORMS[form]
    assert first_syntax_error(parser().parse(source.encode()).root_node) is not None
    expected = run(source)
    assert not expected.startswith("syntax error"), expected
    protector = LuauProtector()
    for preset in PRESETS:
        settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
        problems = protector.check([("G/Modern", source)], settings)
        assert problems and not any(p.blocking for p in problems), problems
        assert "type annotations and declarations removed" in problems[0].message
        out = protector.protect("G/Modern", source, settings, b"license-secret")
        assert run(out) == expected, (preset, out)


def test_attributes_dropped_are_named_with_a_way_to_keep_native_code() -> None:
    source = "local x = 1\n@native\nfunction f(v) return v end\nprint(f(x))"
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
    notes = LuauProtector().check([("G/N", source)], settings)
    dropped = [p for p in notes if "@native" in p.message]
    assert [(p.line, p.blocking) for p in dropped] == [(2, False)]
    assert "--!native" in dropped[0].message


def test_lines_of_real_errors_are_still_the_sellers() -> None:
    source = "type T = {read x: number}\nlocal t: T = {x = 1}\nlocal = =\n"
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
    problems = LuauProtector().check([("G/Bad", source)], settings)
    assert [(p.line, p.blocking) for p in problems if p.blocking] == [(3, True)]


CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.luau"))


def test_erasing_types_keeps_every_corpus_program_parsing_and_behaving() -> None:
    # the erasure only runs on scripts the grammar refuses; held to every program anyway,
    # it must never change what a script does (types, strings, escapes, comments, casts)
    for program in CORPUS:
        source = program.read_text()
        erased = erase_types(source)
        assert erased is not None, program.name
        assert first_syntax_error(parser().parse(erased.source.encode()).root_node) is None
        assert erased.source.count("\n") == source.count("\n")
        assert run(erased.source) == run(source), program.name


@pytest.mark.parametrize("source", [
    "local f = type\nx = 5\nprint(x, f(1))",  # `type` as a value, then a statement
    "local t = {type = 1}\nprint(t.type, type(t))",
    "local s = 'a :: b' -- x: number\nprint(s, #s)",
])
def test_type_like_code_that_is_not_a_type_is_kept(source: str) -> None:
    erased = erase_types(source)
    assert erased is not None and run(erased.source) == run(source)
