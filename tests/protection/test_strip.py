"""`strip`: comments gone, whitespace collapsed, tokens kept apart, behaviour unchanged."""

import pytest

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.protection.vm import run

STRIP = parse_protection_settings({"rules": [{"paths": ["*"], "transforms": ["strip"]}]})

TRICKY = {
    "paren_statements": "local f = 1\n(print)('a')\n"
                        "do (print)('b') end\nlocal function g() (print)('c') end g()\n"
                        "print('d');(print)('e')",
    "numbers_and_dots": "local x = 1 .. 2\nprint(x, 1 .. x, 0x1e - 5, 3 .. .5, 2 - -2, #'ab' .. 1)",
    # Statements that begin with `(` deeper down: doubled, a field assigned, a compound
    # assignment, a call's result called, after `end` and after a table written tight.
    # (After a number: after a call, Luau refuses a line that begins with `(`.)
    "paren_statements_deep": "local t = {x = 1}\nlocal f = function() return print end\n"
                             "local n = 0\n((print))('a')\nn = 1\n(t).x = 2\nn = 2\n"
                             "(t).x += 3\nn = 3\n(f)()('b')\n"
                             "do end(print)(t.x)\nlocal u = {}(print)('c')",
    # Numbers written tight against what follows stay as the seller wrote them; written
    # apart, they are kept apart where joining would change the tokens.
    "numbers_tight": "local x = 5\nprint(1-x, 2+x, x..1, x .. .5, 0x1e-5, 10- -x, 7 .. x,"
                     " 8. .. x, 1e2-1)",
    "minus_minus": "local b = 3\nprint(- -b, 1 - -1, -(-b))",
    "long_brackets": "local t = {}\nt[ [[x]] ] = 1\nt[ [==[y]==] ] = 2\nprint(t.x, t.y)",
    "types": "type A<T> = {T}\nlocal x: A<number> = {1}\nlocal y: number? = nil\n"
             "local z = (x :: any) :: {number}\nprint(#x, y, z[1])",
    "interpolation": "local t = {1}\n"
                     "print(`{ ({t})[1][1] } { ({n = 2}).n } { {t} }`, `a\\`b{`c{1}`}`)",
    "keywords": "local a = nil\nif not a then print(true and 1 or 2) end\n"
                "repeat local q = 1 until q\nwhile false do end\nreturn",
    "compound": "local s = 'a'\ns ..= 'b'\nlocal n = 7\nn //= 2\nn -= -1\nprint(s, n)",
    "comments_everywhere": "--[[ a ]] local --[==[ b ]==] x --c\n= --d\n1 -- e\nprint(x --[[f]])",
    # A `(` after an operator, an opener or `return`/`not`/... begins an expression; here
    # statements begin with `(` after what only looks like one: a number ending in `.`, a
    # comment ending in `=` or `,`, and `then`.
    "paren_after_lookalikes": "local a = 1.\n(print)('a')\nlocal b = 2 -- so b =\n"
                              "(print)('b')\nlocal c = 3 --[[ , ]]\n(print)('c')\n"
                              "if a then (print)('d') end\nlocal t = {(1), 2}\n"
                              "print(not (a), #(t), -(1) + (2) * (3), t[(1)], a == (b))",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_token_pairs_keep_their_meaning(name: str) -> None:
    source = TRICKY[name]
    out = LuauProtector().protect("G/" + name, source, STRIP, b"k")
    assert run(out) == run(source)
    assert "\n" not in out and "--" not in out.replace("- -", "")


def test_numbers_and_parenthesized_statements_are_joined_as_the_tokens_need() -> None:
    out = LuauProtector().protect("G/N", TRICKY["numbers_tight"], STRIP, b"k")
    assert "1-x" in out and "x..1" in out and "0x1e-5" in out  # as written
    assert "7 ..x" in out and "8. ..x" in out  # `7..` or `8...` would be other tokens
    out = LuauProtector().protect("G/P", TRICKY["paren_statements_deep"], STRIP, b"k")
    for statement in ("((print))", "(t).x=2", "(t).x+=3", "(f)()", "(print)(t.x)",
                      "(print)('c')"):
        assert f";{statement}" in out, statement
    out = LuauProtector().protect("G/L", TRICKY["paren_after_lookalikes"], STRIP, b"k")
    assert [out.count(f";(print)('{x}')") for x in "abcd"] == [1, 1, 1, 0], out
    assert out.count(";") == 3, out  # none before the expressions' parentheses


def test_directives_stay_on_top_on_their_own_lines() -> None:
    source = "--!strict\n--!native\n-- a remark\nlocal x = 1 -- trailing\n\n\nprint(x)\n"
    out = LuauProtector().protect("G/D", source, STRIP, b"k")
    assert out == "--!strict\n--!native\nlocal x=1 print(x)"


def test_strings_keep_their_spaces_and_newlines() -> None:
    source = 'print("a  b", [[\n  two\n  lines ]], `x  {1}  y`)'
    out = LuauProtector().protect("G/S", source, STRIP, b"k")
    assert out == 'print("a  b",[[\n  two\n  lines ]],`x  {1}  y`)'
    assert run(out) == run(source)


def test_output_shrinks() -> None:
    source = "-- adds\nlocal function add(a, b)\n    return a + b -- sum\nend\nprint(add(1, 2))\n"
    out = LuauProtector().protect("G/A", source, STRIP, b"k")
    assert out == "local function add(a,b)return a+b end print(add(1,2))"


def test_ambiguous_call_lines_are_refused_like_luau_does() -> None:
    source = "local f = print\nlocal g = f\n(f)('x')"
    assert run(source).startswith("syntax error: ")
    problems = LuauProtector().check([("G/Amb", source)], STRIP)
    assert [(p.path, p.line, p.blocking) for p in problems] == [("G/Amb", 3, True)]
    assert "ambiguous" in problems[0].message
