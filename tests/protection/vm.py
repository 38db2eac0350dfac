"""Running a script in the real Luau VM and recording what it printed and how it failed.

The script is loaded as a chunk of its own (so `--!` directives and top-level `return` keep
their meaning) and called under `pcall` by a harness that captures `print`. Error messages
carry the line they were raised on, and table or function addresses: an obfuscated copy
has other lines and other allocations, so those are normalised; everything else (the text
of every message, every printed value) must match exactly.
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.luau_vm import pluau

_HARNESS = """
return function(main)
  local out = {}
  print = function(...)
    local t = table.pack(...)
    for i = 1, t.n do t[i] = tostring(t[i]) end
    table.insert(out, table.concat(t, " ", 1, t.n))
  end
  local ok, err = pcall(main)
  if not ok then table.insert(out, "error: " .. tostring(err)) end
  return table.concat(out, "\\n")
end
"""

_POSITION = re.compile(r"script:\d+:")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def normalise(message: str) -> str:
    return _ADDRESS.sub("0x?", _POSITION.sub("script:?:", message))


def run(source: str) -> str:
    """What `source` printed, then `error: ...` if it failed (normalised)."""
    lua: Any = pluau().Lua()
    harness = lua.load_chunk(_HARNESS, "=harness")()[0]
    try:
        main = lua.load_chunk(source, "=script")
    except RuntimeError as error:
        return "syntax error: " + normalise(str(error).split("\n")[0])
    return normalise("".join(str(v) for v in harness(main)))
