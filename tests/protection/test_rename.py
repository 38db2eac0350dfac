"""Scope analysis and `rename_locals`: locals renamed consistently, everything else kept."""

import re

from adapters_protection.analysis import analyse
from adapters_protection.luau_protector import LuauProtector
from adapters_protection.syntax import parser, text, walk
from licore.protection import parse_protection_settings
from tests.protection.vm import run

RENAME = parse_protection_settings({"rules": [{"paths": ["*"], "transforms": ["rename_locals"]}]})


def _resolution(source: str) -> list[tuple[str, str]]:
    """Each identifier in source order with where its variable is declared ('global' if none,
    '-' if the identifier is not a variable at all)."""
    root = parser().parse(source.encode()).root_node
    result = analyse(root)
    out = []
    for node in walk(root):
        if node.type != "identifier":
            continue
        binding = result.binding_of(node)
        if binding is None:
            where = "global" if node in result.globals.get(text(node), []) else "-"
        elif binding.declaration is None:
            where = "self"
        else:
            row, column = binding.declaration.start_point
            where = f"{row + 1}:{column}"
        out.append((text(node), where))
    return out


def test_shadowing_initialisers_see_the_outer_variable() -> None:
    assert _resolution("local x = 1\nlocal x = x + 1\nprint(x)") == [
        ("x", "1:6"), ("x", "2:6"), ("x", "1:6"), ("print", "global"), ("x", "2:6")]


def test_fields_methods_keys_and_types_are_not_variables() -> None:
    source = "local t: Foo = {key = 1, [k] = 2}\nprint(t.key, t:m(), t['key'])"
    assert _resolution(source) == [
        ("t", "1:6"), ("Foo", "-"), ("key", "-"), ("k", "global"), ("print", "global"),
        ("t", "1:6"), ("key", "-"), ("t", "1:6"), ("m", "-"), ("t", "1:6")]


def test_local_function_sees_itself_and_methods_get_self() -> None:
    source = "local function f(n) return f(n) end\nfunction T:m(a) return self, a end"
    assert _resolution(source) == [
        ("f", "1:15"), ("n", "1:17"), ("f", "1:15"), ("n", "1:17"),
        ("T", "global"), ("m", "-"), ("a", "2:13"), ("self", "self"), ("a", "2:13")]


def test_repeat_condition_sees_the_body_and_loop_variables_are_scoped() -> None:
    source = "repeat local q = 1 until q\nfor i = i, 2 do end\nfor k, v in pairs(v) do end"
    assert _resolution(source) == [
        ("q", "1:13"), ("q", "1:13"), ("i", "2:4"), ("i", "global"),
        ("k", "3:4"), ("v", "3:7"), ("pairs", "global"), ("v", "global")]


def test_typeof_in_a_type_refers_to_the_variable() -> None:
    source = "local x = 1\ntype T = typeof(x)"
    assert _resolution(source) == [("x", "1:6"), ("T", "-"), ("x", "1:6")]


def test_upvalues_are_counted_per_function() -> None:
    root = parser().parse(b"local a, b = 1, 2\nlocal function f() return a + b end").root_node
    functions = analyse(root).functions
    assert [len(f.upvalues) for f in functions] == [0, 2]


PROGRAM = """
local count = 0
local t = {count = 5, ["x y"] = 6}
function t:bump(by, ...) self.count += by + select('#', ...) return self end
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
for i, v in ipairs({10, 20}) do count += i * v end
for i = 1, 3 do local count = i; t.count += count end
do local print = function(...) print("wrapped", ...) end print(count) end
print(t:bump(2, nil, nil).count, t["x y"], fib(10), count, `{count} {t.count}`)
"""


def test_rename_keeps_behaviour_and_every_non_local_name() -> None:
    out = LuauProtector().protect("G/Main", PROGRAM, RENAME, b"license-1")
    assert run(out) == run(PROGRAM)
    words = set(re.findall(r"[A-Za-z_]\w*", out))
    assert {"print", "select", "ipairs", "bump", "self", "count"} <= words
    assert not {"fib", "by", "n", "v", "i"} & words
    # `count` survives only as a field name: as a variable it was renamed
    assert "local count" not in out and ".count" in out


def test_names_depend_on_license_and_are_stable() -> None:
    p = LuauProtector()
    a = p.protect("G/Main", PROGRAM, RENAME, b"license-1")
    assert a == p.protect("G/Main", PROGRAM, RENAME, b"license-1")
    assert a != p.protect("G/Main", PROGRAM, RENAME, b"license-2")
    assert a != p.protect("G/Other", PROGRAM, RENAME, b"license-1")


def test_getfenv_users_keep_their_names_and_the_check_says_so() -> None:
    source = "local secret = 1\nlocal env = getfenv()\nprint(secret, env ~= nil)"
    p = LuauProtector()
    assert p.protect("G/Env", source, RENAME, b"k") == source
    problems = p.check([("G/Env", source)], RENAME)
    assert [(q.path, q.line, q.blocking) for q in problems] == [("G/Env", 2, False)]
    assert "getfenv" in problems[0].message and "kept" in problems[0].message
