"""Erasing a script's types, for Luau syntax newer than the tree-sitter grammar.

tree-sitter-luau 1.2.0 (the newest on PyPI) does not know some syntax the Luau VM accepts:
function attributes (`@native`, `@checked`, `@[deprecated]`), type functions, `typeof` in
some annotations, `read`/`write` properties, generic defaults and packs, a leading `|` or
`&`, `;` in table types, `for i: number`, and `_` right after a `0x`/`0b` prefix. All of it
is either a type (erased when Luau compiles the script: types never change what a script
does) or a number spelling. So a script the grammar refuses is protected from a copy with
its types erased, where that copy parses:

- annotations on locals, `for` variables, parameters and returns, and generic parameter
  lists of functions are removed; a cast `e :: T` becomes `e :: any` (a cast is kept: it
  cuts a call's results to one, as `(f())` does);
- `type` and `export type` declarations and type functions are removed;
- attributes are removed (`@native` only changes how Roblox compiles the function, never
  its results; `@checked` and `@deprecated` are for the type checker and linter);
- `_` is removed from numbers (`0x_ff` is 255 either way).

Every line keeps its number, so problems still name the seller's lines. The scan works on
tokens (strings, comments and interpolation are read as Luau reads them); anything it does
not recognise makes it give up, and the script is then refused as before.
"""

from __future__ import annotations

import re

import attrs

_LONG = re.compile(r"\[(=*)\[")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:0[xXbB][0-9A-Fa-f_]*|(?:[0-9][0-9_]*\.?[0-9_]*|\.[0-9][0-9_]*)"
                     r"(?:[eE][+-]?[0-9_]+)?)")
_SPACE = re.compile(r"\s+")
_SYMBOLS = ("...", "..", "::", "->", "==", "~=", "//")
_OPEN = {"(": ")", "{": "}", "[": "]"}
_BLOCK_OPENERS = frozenset({"function", "do", "if", "repeat"})
# Words after which an expression continues.
_CONTINUING = frozenset({"and", "or", "not", "return", "local", "in", "until", "if",
                         "elseif", "while"})


class GiveUp(Exception):
    """The scan met something it does not understand."""


@attrs.frozen
class Token:
    kind: str  # name, number, string, symbol
    text: str
    start: int
    end: int


def tokens(source: str) -> list[Token]:
    out: list[Token] = []
    pos, n = 0, len(source)
    while pos < n:
        ch = source[pos]
        if m := _SPACE.match(source, pos):
            pos = m.end()
        elif source.startswith("--", pos):
            long = _LONG.match(source, pos + 2)
            if long:
                close = source.find("]" + long.group(1) + "]", long.end())
                pos = n if close < 0 else close + len(long.group(1)) + 2
            else:
                close = source.find("\n", pos)
                pos = n if close < 0 else close
        elif ch == "[" and (long := _LONG.match(source, pos)):
            close = source.find("]" + long.group(1) + "]", long.end())
            if close < 0:
                raise GiveUp
            end = close + len(long.group(1)) + 2
            out.append(Token("string", source[pos:end], pos, end))
            pos = end
        elif ch in "\"'":
            end = _quoted_end(source, pos, ch)
            out.append(Token("string", source[pos:end], pos, end))
            pos = end
        elif ch == "`":
            end = _interpolated_end(source, pos)
            out.append(Token("string", source[pos:end], pos, end))
            pos = end
        elif ch.isdigit() or (ch == "." and source[pos + 1:pos + 2].isdigit()):
            m = _NUMBER.match(source, pos)
            assert m is not None
            out.append(Token("number", m.group(0), pos, m.end()))
            pos = m.end()
        elif m := _NAME.match(source, pos):
            out.append(Token("name", m.group(0), pos, m.end()))
            pos = m.end()
        else:
            symbol = next((s for s in _SYMBOLS if source.startswith(s, pos)), ch)
            out.append(Token("symbol", symbol, pos, pos + len(symbol)))
            pos += len(symbol)
    return out


def _quoted_end(source: str, pos: int, quote: str) -> int:
    i = pos + 1
    while i < len(source):
        c = source[i]
        if c == "\\":
            following = source[i + 1:i + 3]
            if following.startswith("z"):  # \z skips the whitespace after it, lines too
                i += 2
                while i < len(source) and source[i] in " \t\n\r\v\f":
                    i += 1
            else:
                i += 3 if following in ("\r\n", "\n\r") else 2
            continue
        if c == quote:
            return i + 1
        if c == "\n":
            break
        i += 1
    raise GiveUp


def _interpolated_end(source: str, pos: int) -> int:
    i = pos + 1
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 2
        elif c == "`":
            return i + 1
        elif c == "{":
            i = _expression_end(source, i + 1)
        else:
            i += 1
    raise GiveUp


def _expression_end(source: str, i: int) -> int:
    """The offset after the `}` closing an interpolated string's expression."""
    depth = 0
    while i < len(source):
        c = source[i]
        if c in "\"'":
            i = _quoted_end(source, i, c)
        elif c == "`":
            i = _interpolated_end(source, i)
        elif c == "[" and (long := _LONG.match(source, i)):
            close = source.find("]" + long.group(1) + "]", long.end())
            if close < 0:
                raise GiveUp
            i = close + len(long.group(1)) + 2
        elif c == "{":
            depth, i = depth + 1, i + 1
        elif c == "}":
            if depth == 0:
                return i + 1
            depth, i = depth - 1, i + 1
        else:
            i += 1
    raise GiveUp


class _Eraser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.toks = tokens(source)
        self.edits: list[tuple[int, int, str]] = []
        self.attributes: list[int] = []  # offsets of the attributes removed

    def text(self, i: int) -> str:
        return self.toks[i].text if i < len(self.toks) else ""

    def kind(self, i: int) -> str:
        return self.toks[i].kind if i < len(self.toks) else ""

    def erase(self, i: int, j: int, replacement: str = " ") -> None:
        """Replace tokens [i, j) (keeping the lines they span)."""
        if i >= j:
            return
        start, end = self.toks[i].start, self.toks[j - 1].end
        lines = self.source.count("\n", start, end)
        self.edits.append((start, end, replacement + "\n" * lines))

    def balanced(self, i: int) -> int:
        """The index after the bracket group opened at `i` (`(`, `{`, `[` or `<`)."""
        opener = self.text(i)
        closer = ">" if opener == "<" else _OPEN[opener]
        i += 1
        while i < len(self.toks):
            t = self.text(i)
            if t in _OPEN or (t == "<" and opener == "<"):
                i = self.balanced(i)
            elif t == closer:
                return i + 1
            else:
                i += 1
        raise GiveUp

    def type_end(self, i: int) -> int:
        """The index after the type starting at `i`."""
        if self.text(i) in ("|", "&"):
            i += 1
        while True:
            i = self._primary(i)
            while self.text(i) == "?":
                i += 1
            if self.text(i) in ("|", "&"):
                i += 1
                continue
            return i

    def _primary(self, i: int) -> int:
        t, kind = self.text(i), self.kind(i)
        if t == "typeof" and self.text(i + 1) == "(":
            return self.balanced(i + 1)
        if t == "<":  # a generic function type
            i = self.balanced(i)
            if self.text(i) != "(":
                raise GiveUp
            t = "("
        if t == "(":
            i = self.balanced(i)
            if self.text(i) == "->":
                return self.type_end(i + 1)
            return i
        if t == "{":
            return self.balanced(i)
        if t == "...":
            return self._primary(i + 1)
        if kind == "string" or t in ("nil", "true", "false"):
            return i + 1
        if kind == "name":
            i += 1
            while self.text(i) == "." and self.kind(i + 1) == "name":
                i += 2
            if self.text(i) == "<":
                i = self.balanced(i)
            if self.text(i) == "...":
                i += 1
            return i
        raise GiveUp

    def block_end(self, i: int) -> int:
        """The index after the `end` closing the block opened at `i`."""
        depth = 0
        while i < len(self.toks):
            t, kind = self.text(i), self.kind(i)
            prev = self.text(i - 1) if i else ""
            if kind == "name" and prev not in (".", ":"):
                if t in _BLOCK_OPENERS:
                    depth += 1
                elif t in ("end", "until"):
                    depth -= 1
                    if depth == 0:
                        return i + 1
            i += 1
        raise GiveUp

    def annotation(self, i: int) -> int:
        """Erase `: T` at `i` if there is one; the index after it."""
        if self.text(i) == ":":
            end = self.type_end(i + 1)
            self.erase(i, end)
            return end
        return i

    def run(self) -> str:
        i = 0
        while i < len(self.toks):
            i = self.step(i)
        out, pos = [], 0
        for start, end, replacement in sorted(self.edits):
            if start < pos:
                raise GiveUp
            out += [self.source[pos:start], replacement]
            pos = end
        out.append(self.source[pos:])
        return "".join(out)

    def _statement_start(self, i: int) -> bool:
        """Whether `type` at `i` begins a declaration (`type Name`), not an expression
        such as `local f = type` followed by a statement on the next line."""
        prev, prev_kind = (self.text(i - 1), self.kind(i - 1)) if i else ("", "")
        if prev_kind == "symbol" and prev not in (")", "]", "}", ";"):
            return False
        if prev in _CONTINUING:
            return False
        return self.kind(i + 1) == "name"

    def step(self, i: int) -> int:
        t, kind = self.text(i), self.kind(i)
        if kind == "number" and "_" in t:
            self.edits.append((self.toks[i].start, self.toks[i].end, t.replace("_", "")))
            return i + 1
        if t == "@":
            self.attributes.append(self.toks[i].start)
            end = self.balanced(i + 1) if self.text(i + 1) == "[" else i + 2
            self.erase(i, end)
            return end
        if t == "export" and self.text(i + 1) == "type" and self._statement_start(i + 1):
            end = self._type_declaration_end(i + 1)
            self.erase(i, end)
            return end
        if t == "type" and kind == "name" and self._statement_start(i):
            end = self._type_declaration_end(i)
            self.erase(i, end)
            return end
        if t == "::":
            end = self.type_end(i + 1)
            self.erase(i + 1, end, "any")
            return end
        if t == "local" and self.text(i + 1) != "function":
            return self._names(i + 1)
        if t == "for":
            return self._names(i + 1)
        if t == "function":
            return self._function_head(i + 1)
        return i + 1

    def _type_declaration_end(self, i: int) -> int:
        if self.text(i + 1) == "function":
            return self.block_end(i + 1)
        i += 2  # `type Name`
        if self.text(i) == "<":
            i = self.balanced(i)
        if self.text(i) != "=":
            raise GiveUp
        return self.type_end(i + 1)

    def _names(self, i: int) -> int:
        while self.kind(i) == "name":
            i += 1
            if self.text(i) == "<":  # <const>, <close>
                i = self.balanced(i)
            i = self.annotation(i)
            if self.text(i) != ",":
                break
            i += 1
        return i

    def _function_head(self, i: int) -> int:
        while self.kind(i) == "name" or self.text(i) in (".", ":"):
            i += 1
        if self.text(i) == "<":
            end = self.balanced(i)
            self.erase(i, end)
            i = end
        if self.text(i) != "(":
            return i
        i += 1
        while self.text(i) != ")":
            if self.kind(i) == "name" or self.text(i) == "...":
                i = self.annotation(i + 1)
            elif self.text(i) == ",":
                i += 1
            else:
                raise GiveUp
        return self.annotation(i + 1)


@attrs.frozen
class Erased:
    source: str
    attribute_offsets: tuple[int, ...]


def erase_types(source: str) -> Erased | None:
    """`source` with its types, attributes and number separators erased, or None when
    the scan does not understand the script."""
    try:
        eraser = _Eraser(source)
        return Erased(eraser.run(), tuple(eraser.attributes))
    except (GiveUp, RecursionError, IndexError):
        return None
