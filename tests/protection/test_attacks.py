"""Attacks a motivated buyer would try on their own copy, with ordinary tools, run against a
realistic script (tests/protection/realistic/shop.luau: 58 literals, the key injected).

- A static literal extractor: every quoted string in the copy, read as written and under
  every simple cipher a regex pass would try: the published attack on the old decoder
  (first character the key, the step read from the decoder), and every rotation, shift and
  XOR with one key. No literal of the script and not the key may come out.
- A library-hook extractor: every function of the standard libraries (and the global ones)
  is wrapped before the copy runs, recording every string going in or out. No hook may
  see most literals when the script starts (nothing is decoded before it is used), no one
  function may hand out most literals, and the key may first appear as the argument of
  the call that uses it.
- A drain on a partial run: `setmetatable`, `string.char`, `string.byte`, `table.concat`,
  `table.create` and every `buffer` function hooked before the copy runs, then, after a run
  that leaves one branch untaken, every metatable's `__index`, every table a hook saw and
  every function caught decoding or found in those tables asked for hundreds of slots. It
  empties the previous layout (a lazy table of all the literals); on a copy it must get no
  literal of the branch the run did not take.
- A control-flow unroller: for every dispatch loop, the state variable (the one compared
  with numbers) and each assignment to it; a transition whose value is a literal, or a read
  of the constant table (which the attacker inlines), gives the next block away. None may.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import tree_sitter

from adapters_protection.literals import value_literals
from adapters_protection.luau_protector import LuauProtector
from adapters_protection.strings import decode_quoted, literal_bytes
from adapters_protection.syntax import LANGUAGE, Node, is_interpolated, parser, text, walk
from licore.protection import parse_protection_settings
from tests.protection.vm import run
from tests.support.luau_vm import pluau

SHOP = (Path(__file__).resolve().parent / "realistic" / "shop.luau").read_text()
KEY = "lk_live_Zx81Qm4TfP0aR7sVb2NcY9dE3hJkLwUo"
SOURCE = SHOP.replace("__LICORE_LICENSE_KEY__", KEY)
SECRET = b"license-secret-of-one-buyer"
PRESETS = ("light", "strong")


@cache
def _copy(preset: str) -> str:
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    return LuauProtector().protect("ServerScriptService/Shop", SOURCE, settings, SECRET)


@cache
def _literals() -> frozenset[bytes]:
    """The script's string literals worth stealing (four bytes or more), the key among them."""
    root = parser().parse(SOURCE.encode()).root_node
    found = {literal_bytes(n) for n in value_literals(root)
             if n.type == "string" and not is_interpolated(n)}
    return frozenset(v for v in found if len(v) >= 4)


def test_the_script_is_realistic_and_runs() -> None:
    assert len(_literals()) >= 45 and KEY.encode() in _literals()
    assert SOURCE.count("\n") >= 180
    for preset in PRESETS:
        assert run(_copy(preset)) == run(SOURCE)


# The static extractor -------------------------------------------------------------------

_QUOTED = re.compile(r'"((?:[^"\\\n]|\\.|\\\n)*)"|\'((?:[^\'\\\n]|\\.|\\\n)*)\'', re.DOTALL)
_PRINTABLE = range(32, 127)


def _rotate(value: bytes, k: int, step: int) -> bytes:
    return bytes(32 + (b - 32 - k - (i + 2) * step) % 95 if b in _PRINTABLE else b
                 for i, b in enumerate(value))


def static_extract(copy: str) -> list[bytes]:
    """Every reading of every quoted string in `copy` a regex-and-brute-force pass makes."""
    steps = {int(s) for s in re.findall(r"i\*(\d+)\)%95", copy)} or set(range(1, 95))
    readings: list[bytes] = []
    for m in _QUOTED.finditer(copy):
        try:
            value = decode_quoted(m.group(1) if m.group(1) is not None else m.group(2))
        except ValueError:
            continue
        readings.append(value)
        if len(value) > 1:  # the old decoder: key first, then the step from the decoder
            readings += [_rotate(value[1:], value[0], step) for step in steps]
            readings += [_rotate(value[1:], value[0] - 64, step) for step in steps]
        readings += [bytes(32 + (b - 32 - k) % 95 if b in _PRINTABLE else b for b in value)
                     for k in range(95)]  # Caesar within printable
        readings += [bytes(b ^ k for b in value) for k in range(256)]
        readings += [bytes((b - k) % 256 for b in value) for k in range(256)]
    return readings


@pytest.mark.parametrize("preset", PRESETS)
def test_no_literal_and_not_the_key_falls_to_a_static_pass(preset: str) -> None:
    readings = static_extract(_copy(preset))
    recovered = {lit for lit in _literals() if any(lit in r for r in readings)}
    # A word the script also uses as a field name (`player.owned`) is in the code for
    # anyone to read; the watermark may write that access as `player["owned"]`.
    fields = set(re.findall(rb"[.:]\s*([A-Za-z_]\w*)", SOURCE.encode()))
    assert recovered - fields == set()


def test_the_extractor_recovers_literals_from_an_unprotected_copy() -> None:
    # the extractor works: on a copy that only strips, it reads every literal
    minify = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})
    copy = LuauProtector().protect("S/Shop", SOURCE, minify, SECRET)
    readings = static_extract(copy)
    assert all(any(lit in r for r in readings) for lit in _literals())


# The library-hook extractor ---------------------------------------------------------------

_HOOKS = r"""
local log, n = {}, 0
local kind_of, count, pick, pack, unpack = type, select, select, table.pack, table.unpack
local function note(name, direction, ...)
  for i = 1, count("#", ...) do
    local v = pick(i, ...)
    if kind_of(v) == "string" then
      n += 1 log[n] = name .. "\1" .. direction .. "\1" .. #v .. "\1" .. v
    end
  end
end
local function wrap(name, f)
  return function(...)
    note(name, "in", ...)
    local r = pack(f(...))
    note(name, "out", unpack(r, 1, r.n))
    return unpack(r, 1, r.n)
  end
end
local libraries = {string = string, table = table, math = math, utf8 = utf8, bit32 = bit32,
  buffer = buffer, os = os, coroutine = coroutine}
local each = pairs
for lib, t in each(libraries) do
  local names = {}
  for k, f in each(t) do if kind_of(f) == "function" then names[#names + 1] = k end end
  for _, k in ipairs(names) do t[k] = wrap(lib .. "." .. k, t[k]) end
end
for _, k in ipairs({"tostring", "tonumber", "select", "type", "setmetatable", "getmetatable",
    "rawset", "rawget", "rawequal", "rawlen", "next", "pairs", "ipairs", "unpack"}) do
  local f = getfenv()[k]
  if f then getfenv()[k] = wrap(k, f) end
end
print = function(...) n += 1 log[n] = "print\1in\0010\1" end
return function() return table.concat(log) end
"""


def hook_events(copy: str) -> list[tuple[str, str, bytes]]:
    """(function, "in"/"out", string) for every string a hooked function saw, in order."""
    lua: Any = pluau().Lua()
    read_log = lua.load_chunk(_HOOKS, "=hooks")()[0]
    lua.load_chunk(copy, "=script")()
    raw = read_log()[0].as_bytes()
    events, pos = [], 0
    while pos < len(raw):  # name \1 direction \1 length \1 value
        name, direction, length, _ = raw[pos:pos + 200].split(b"\1", 3)
        pos += len(name) + len(direction) + len(length) + 3
        events.append((name.decode(), direction.decode(), raw[pos:pos + int(length)]))
        pos += int(length)
    return events


@pytest.mark.parametrize("preset", PRESETS)
def test_hooks_see_no_literals_at_start_and_no_function_hands_them_all_out(
        preset: str) -> None:
    events = hook_events(_copy(preset))
    first_print = next(i for i, e in enumerate(events) if e[0] == "print")
    seen_at_start = {v for _, _, v in events[:first_print]} & _literals()
    # the license check runs before the first print and uses a few literals
    assert len(seen_at_start) <= len(_literals()) // 4, sorted(seen_at_start)
    handed_out: dict[str, set[bytes]] = {}
    for name, direction, value in events:
        if direction == "out" and value in _literals():
            handed_out.setdefault(name, set()).add(value)
    assert all(len(v) <= len(_literals()) // 4 for v in handed_out.values()), \
        {k: len(v) for k, v in handed_out.items()}


def _first_sight_of_the_key(events: list[tuple[str, str, bytes]]) -> tuple[str, str]:
    name, direction, _ = next(e for e in events if KEY.encode() in e[2])
    return name, direction


@pytest.mark.parametrize("preset", PRESETS)
def test_the_key_is_first_seen_by_the_call_that_uses_it(preset: str) -> None:
    # in the unprotected script, the first library call to see the key is the checksum
    # over the request, which uses it; the copy must not show it any earlier
    expected = _first_sight_of_the_key(hook_events(SOURCE))
    assert expected[1] == "in"
    assert _first_sight_of_the_key(hook_events(_copy(preset))) == expected


def test_hooks_see_literals_when_they_are_used() -> None:
    # the hooks work: in an unprotected copy the messages pass through them as the game runs
    events = hook_events(SOURCE)
    assert len({v for _, _, v in events} & _literals()) >= 10


# The control-flow unroller ----------------------------------------------------------------

_LOOPS = tree_sitter.Query(LANGUAGE, "(while_statement) @loop")


def _constant_tables(root: Node) -> set[str]:
    """Tables built by a constructor (`local T = {...}`): what the attacker inlines."""
    return set(re.findall(r"local\s+(\w+)\s*=\s*\{", text(root)))


def unroll(copy: str) -> tuple[int, int]:
    """(dispatch loops found, transitions whose next state a syntactic pass can read)."""
    root = parser().parse(copy.encode()).root_node
    tables = _constant_tables(root)
    loops = readable = 0
    for loop in tree_sitter.QueryCursor(_LOOPS).captures(root).get("loop", []):
        condition = loop.child_by_field_name("condition")
        if condition is None or text(condition) != "true":
            continue
        compared = Counter(m.group(1) for m in re.finditer(r"(\w+)\s*==\s*[\w\[\]]+",
                                                            text(loop)))
        if not compared:
            continue
        state = compared.most_common(1)[0][0]
        loops += 1
        for node in walk(loop):
            if node.type != "assignment_statement":
                continue
            target, _, value = text(node).partition("=")
            if target.strip() != state:
                continue
            value = value.strip()
            indexed = re.fullmatch(r"(\w+)\[(\d+)\]", value)
            if re.fullmatch(r"-?[\d.]+", value) or (indexed and indexed.group(1) in tables):
                readable += 1
    return loops, readable


def test_no_dispatch_transition_can_be_read_off_the_copy() -> None:
    loops, readable = unroll(_copy("strong"))
    assert loops >= 8
    assert readable == 0


def test_flattening_alone_leaves_no_readable_transition() -> None:
    flatten = parse_protection_settings({"rules": [{"paths": ["*"], "transforms": ["flatten"]}]})
    copy = LuauProtector().protect("S/Shop", SOURCE, flatten, SECRET)
    assert run(copy) == run(SOURCE)
    loops, readable = unroll(copy)
    assert loops >= 8 and readable == 0


# Draining hooks on a partial run -------------------------------------------------------

# A chat handler whose admin branch the run never takes: its literals are what a drain
# must not reach.
PARTIAL = """
local KEY = "lk_live_Pq81Zm4TfP0aR7sVb2NcY9dE3hJkLwUo"
local function greet(name) return "Welcome to the arena, " .. name .. "!" end
local function adminPanel(cmd)
  if cmd == "ban-everyone-right-now" then return "https://admin.example.dev/secret-ban" end
  local routes = {reset = "reset-all-stats-of-the-server", grant = "grant-mythic-to-all"}
  return routes[cmd] or "unknown admin command"
end
local function onChat(player, message)
  if message == "/open-the-admin-door" then return adminPanel(message) end
  return greet(player)
end
print(onChat("ben", "hello there"))
print(#KEY)
"""
UNREACHED = frozenset({b"ban-everyone-right-now", b"https://admin.example.dev/secret-ban",
                       b"reset-all-stats-of-the-server", b"grant-mythic-to-all",
                       b"unknown admin command"})

_DRAIN = r"""
local found, n = {}, 0
local kind_of, pick, count, pack, unpack = type, select, select, table.pack, table.unpack
local info, protected, step = debug.info, pcall, next
local function keep(...)
  for i = 1, count("#", ...) do
    local v = pick(i, ...)
    if kind_of(v) == "string" then n += 1 found[n] = v end
  end
end
local metatables, callers = {}, {}
local function wrap(f, before)
  return function(...)
    if before then before(...) end
    keep(...)
    local r = pack(f(...))
    keep(unpack(r, 1, r.n))
    return unpack(r, 1, r.n)
  end
end
setmetatable = wrap(setmetatable, function(t, mt) metatables[#metatables + 1] = {t, mt} end)
local made = {}
string.char = wrap(string.char)
table.concat = wrap(table.concat)
local create = table.create
table.create = function(...) local t = create(...) made[#made + 1] = t return t end
-- a hook inside the decoder: it sees the ciphertext, and takes the function calling it
string.byte = wrap(string.byte, function() callers[#callers + 1] = info(3, "f") end)
for k, f in step, buffer do
  if kind_of(f) == "function" then buffer[k] = wrap(f) end
end
return function()
  -- the drain: every metatable's __index asked for every slot, every table read raw, every
  -- function caught decoding called on every slot
  for _, pair in metatables do
    local t, mt = pair[1], pair[2]
    if kind_of(mt) == "table" and kind_of(mt.__index) == "function" then
      for k = -4, 600 do keep(protected(mt.__index, t, k)) end
    end
    for _, v in step, t do keep(v) end
  end
  for _, t in made do
    for _, v in step, t do
      keep(v)
      if kind_of(v) == "function" then callers[#callers + 1] = v end
    end
  end
  for _, f in callers do
    if kind_of(f) == "function" then
      for k = -4, 600 do keep(protected(f, k)) keep(protected(f, nil, k)) end
    end
  end
  return table.concat(found, "\0")
end
"""


def drained(copy: str) -> set[bytes]:
    """Every string the hooks and the drain got out of one run of `copy`."""
    lua: Any = pluau().Lua()
    drain = lua.load_chunk(_DRAIN, "=hooks")()[0]
    lua.load_chunk(copy, "=script")()
    return set(drain()[0].as_bytes().split(b"\0"))


def _old_style(source: str) -> str:
    """The literals behind a lazy table with a metatable, as the previous encrypt_strings
    wrote them (without the cipher, which the drain never needed to read)."""
    literals: list[str] = []

    def slot(m: re.Match[str]) -> str:
        literals.append(m.group(0))
        return f"S[{len(literals)}]"

    body = re.sub(r'"[^"]*"', slot, source)
    return (f"local S = setmetatable({{}}, {{__index = function(t, k) local v = "
            f"({{{','.join(literals)}}})[k] t[k] = v return v end}})\n{body}")


def test_the_drain_empties_a_lazy_table_behind_a_metatable() -> None:
    # the drain works: on the previous layout it gets every literal, run or not
    copy = _old_style(PARTIAL)
    assert run(copy) == run(PARTIAL)
    assert drained(copy) >= UNREACHED


@pytest.mark.parametrize("preset", PRESETS)
def test_hooks_and_a_drain_get_only_the_literals_the_run_reached(preset: str) -> None:
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    copy = LuauProtector().protect("ServerScriptService/Chat", PARTIAL, settings, SECRET)
    assert run(copy) == run(PARTIAL)
    got = drained(copy)
    assert not {lit for lit in UNREACHED if any(lit in g for g in got)}
    # the unreached literals are in the copy all the same, each at its use site
    assert copy.count("or ") >= len(UNREACHED)
