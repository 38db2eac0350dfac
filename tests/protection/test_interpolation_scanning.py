"""Strings inside an interpolated string's `{...}` are ciphered without a raw backtick or
brace, like the interpolation's own text: the watermark's scanner reads an interpolated
string from backtick to backtick, and a ciphertext's backtick there would leave the rest of
the copy read as strings, its carriers unmarked and unread."""

from __future__ import annotations

import pytest

from adapters_protection.luau_protector import LuauProtector
from adapters_protection.syntax import parser, walk
from adapters_protection.watermark import read, tokens
from licore.protection import parse_protection_settings
from tests.protection.vm import run

LONG = "abcdefghijklmnopqrstuvwxyz0123456789ABCD"  # 40 characters: ciphertexts hold all sorts
SOURCE = f"""local function f(s) return #s end
print(`a {{f("{LONG}")}} b {{f('{LONG[::-1]}')}} c {{f("{{`}}" .. "{LONG}")}} d`)
local t = {{}}
for i = 1, 50 do t[i] = i * 3 end
if t[3] == 9 then print("ok", t[10], t.n, 0x10) end
"""


def _backtick_spans(copy: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Where the scanner reads backtick strings, and where the copy's tree has them."""
    scanned = [(start, end) for kind, text, start, end in tokens(copy)
               if kind == "str" and text.startswith("`")]
    data = copy.encode()
    assert len(data) == len(copy)  # ASCII: characters are bytes
    root = parser().parse(data).root_node
    parsed = [(n.start_byte, n.end_byte) for n in walk(root)
              if n.type == "string" and data[n.start_byte:n.start_byte + 1] == b"`"]
    return scanned, parsed


@pytest.mark.parametrize("preset", ["light", "strong"])
def test_the_scanner_reads_each_interpolated_string_where_it_is(preset: str) -> None:
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
    protector = LuauProtector()
    expected = run(SOURCE)
    tail_carriers = 0
    for n in range(20):
        copy = protector.protect("G/Interp", SOURCE, settings, f"license {n}".encode())
        scanned, parsed = _backtick_spans(copy)
        assert scanned == parsed, n
        after = max(end for _, end in parsed)
        tail_carriers += sum(1 for _, _, at in read(copy) if at > after)
        if n < 3:
            assert run(copy) == expected
    assert tail_carriers > 20  # the code after the interpolation is read for its marks
