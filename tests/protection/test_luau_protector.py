"""The tree-sitter protector: checks name script and line; strip keeps behaviour."""

from typing import Any

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.support.luau_vm import pluau

MINIFY = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})

PROGRAM = """-- header comment
local s = "--not a comment" --[==[ long
comment ]==] local t = [[--kept]]
print(s, t, 7 // 2) --[[ x ]] print(#s)
"""


# print is captured inside the VM so the chunk returns everything it printed.
_HARNESS = """local __o = {}
print = function(...)
  local t = table.pack(...)
  for i = 1, t.n do t[i] = tostring(t[i]) end
  table.insert(__o, table.concat(t, " ", 1, t.n))
end
local function __main()
%s
end
__main()
return table.concat(__o, "\\n")
"""


def _run(src: str) -> str:
    lua: Any = pluau().Lua()
    result = lua.load_chunk(_HARNESS % src, "t")()
    return "".join(str(v) for v in result)


def test_strip_removes_comments_but_not_strings() -> None:
    out = LuauProtector().protect("A/Main", PROGRAM, MINIFY, b"k")
    assert "header" not in out and "long" not in out
    assert "--not a comment" in out and "[[--kept]]" in out


def test_strip_keeps_vm_output() -> None:
    out = LuauProtector().protect("A/Main", PROGRAM, MINIFY, b"k")
    assert _run(out) == _run(PROGRAM)


def test_check_names_script_and_line() -> None:
    problems = LuauProtector().check(
        [("A/Fine", "local x = 1\nprint(getfenv())"), ("A/Bad", "local x\nlocal = =\n")],
        MINIFY)
    assert [(p.path, p.line, p.blocking) for p in problems] == [("A/Bad", 2, True)]
    assert str(problems[0]).startswith("A/Bad, line 2: syntax error")
