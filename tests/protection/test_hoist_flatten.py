"""`hoist_constants` and `flatten`: literals move to one keyed table, blocks become dispatch
loops, and both leave alone what they cannot change safely."""

import re

import pytest

from adapters_protection.luau_protector import LuauProtector
from licore.protection import ProtectionSettings, parse_protection_settings
from tests.protection.vm import run


def _settings(*transforms: str) -> ProtectionSettings:
    return parse_protection_settings({"rules": [{"paths": ["*"], "transforms": list(transforms)}]})


HOIST = _settings("hoist_constants")
FLATTEN = _settings("flatten")

CONSTANTS = """
type Mode = "fast" | "slow"
local mode: Mode = "fast"
local t = {alpha = 1.5, [2] = "two", 0x10}
print(mode, t.alpha, t[2], t[1], #"len", string.rep"ab", 7 // 2, -3, `x{t.alpha}y`, 1e3)
"""


def test_hoisting_moves_every_value_literal_into_one_table() -> None:
    out = LuauProtector().protect("G/C", CONSTANTS, HOIST, b"license-1")
    assert run(out) == run(CONSTANTS)
    declaration, _, body = out.partition(";")
    assert declaration.startswith("local ") and "{" in declaration
    # the singleton type keeps its strings; no value literal is left in the body
    assert '"fast" | "slow"' in body
    value_part = body.split('"slow"', 1)[1]
    assert not re.search(r'"|\b\d', re.sub(r"\w+\[\d+\]", "", value_part))


def test_table_order_is_keyed_by_license() -> None:
    p = LuauProtector()
    a = p.protect("G/C", CONSTANTS, HOIST, b"license-1")
    assert a == p.protect("G/C", CONSTANTS, HOIST, b"license-1")
    b = p.protect("G/C", CONSTANTS, HOIST, b"license-2")

    def entries(out: str) -> list[str]:
        return sorted(out.split("{", 1)[1].split("};", 1)[0].split(","))

    assert entries(a) == entries(b)  # the same constants ...
    assert a.split(";", 1)[0].split("=", 1)[1] != b.split(";", 1)[0].split("=", 1)[1]


FLAT = """
local function sum(...)
  local total = 0
  for _, v in ipairs({...}) do total += v end
  local n = select('#', ...)
  return total, n
end
local a, b = sum(1, 2, 3)
local t = {}
repeat local k = #t + 1; t[k] = k * a; a += 0 until k >= b
print(a, b, #t, t[3])
"""


def test_flattened_blocks_keep_behaviour() -> None:
    out = LuauProtector().protect("G/F", FLAT, FLATTEN, b"license-1")
    assert run(out) == run(FLAT)
    # the chunk, the function body and the repeat body each became a dispatch loop
    assert out.count("while true do") == 3
    assert "local function" not in out


def test_dispatch_differs_per_license_and_is_stable() -> None:
    p = LuauProtector()
    a = p.protect("G/F", FLAT, FLATTEN, b"license-1")
    assert a == p.protect("G/F", FLAT, FLATTEN, b"license-1")
    assert a != p.protect("G/F", FLAT, FLATTEN, b"license-2")


@pytest.mark.parametrize(("source", "kept"), [
    # a break that would leave the dispatch loop instead of the for loop
    ("for i = 1, 3 do\n  print(i)\n  if i == 2 then break end\nend", None),
    # continue likewise
    ("for i = 1, 3 do\n  if i == 2 then continue end\n  print(i)\nend", None),
    # `x` in the first statement is the global, which declaring `x` up front would capture
    ("local function show() print(x) end\nlocal x = 5\nshow()", None),
    # the inner block's first `v` is the outer one, which declaring `v` up front would hide
    # (the chunk around it is flattened: its `v` is the one every `v` in it means)
    ("local v = 1\ndo\n  print(v)\n  local v = v + 1\n  print(v)\nend\nprint(v)",
     "do\n  print(v)\n  local v = v + 1\n  print(v)\nend"),
    # a constant cannot be assigned after its declaration
    ("local k <const> = 1\nprint(k)", None),
    # two locals of one name in one block
    ("local s = 1\nlocal s = s + 1\nprint(s)", None),
])
def test_unsafe_blocks_are_left_as_written(source: str, kept: str | None) -> None:
    out = LuauProtector().protect("G/U", source, FLATTEN, b"license-1")
    assert run(out) == run(source)
    if kept is None:
        assert out == source
    else:
        assert kept in out and out.count("while true do") == 1


def test_locals_declared_inside_nested_blocks_do_not_stop_flattening() -> None:
    source = "local x = 1\ndo local x = 2 print(x) x += 0 end\nlocal function f(x) return x end\n" \
             "print(x, f(3))"
    out = LuauProtector().protect("G/N", source, FLATTEN, b"license-1")
    assert out.count("while true do") == 2  # the chunk and the `do` block
    assert run(out) == run(source) == "2\n1 3"


def test_flatten_inside_loops_keeps_per_iteration_locals() -> None:
    source = """
local fns = {}
for i = 1, 3 do
  local j = i * 10
  fns[i] = function() return j end
  j += 1
end
print(fns[1](), fns[2](), fns[3]())
"""
    out = LuauProtector().protect("G/L", source, FLATTEN, b"license-1")
    assert out.count("while true do") == 2
    assert run(out) == run(source) == "11 21 31"


def test_types_move_ahead_of_the_dispatch_loop() -> None:
    source = "export type P = {x: number}\nlocal p: P = {x = 1}\nprint(p.x)\nreturn p"
    out = LuauProtector().protect("G/T", source, FLATTEN, b"license-1")
    assert out.startswith("export type P")
    assert "while true do" in out
    assert run(out) == run(source)


def test_a_long_block_dispatches_by_bisection_within_luaus_parser_limits() -> None:
    # a flat `elseif` chain this long passes Luau's parser recursion limit
    source = "local t = {}\n" + "".join(f"t[#t + 1] = {i} * 2\n" for i in range(1500)) + \
        "print(#t, t[1], t[1500])\n"
    out = LuauProtector().protect("G/Long", source, FLATTEN, b"license-1")
    bisections = re.findall(r"\bif [A-Za-z]\w*<\d+ then\b", out)
    assert out.count("while true do") == 1 and len(bisections) > 100
    assert run(out) == run(source) == "1500 0 2998"
