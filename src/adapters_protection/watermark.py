"""`watermark`: one license's code bits written into choices a renamer, a formatter and a
minifier keep, and read back in one linear pass over a leaked text.

Two kinds of carrier, each holding one bit:
- the orientation of a comparison whose operands are each a name or a literal:
  `x == 5` or `5 == x`, `a < b` or `b > a` (likewise `~=`, `<=`/`>=`). Swapping such operands
  changes nothing: neither side has an effect to reorder, `==` with a literal never reaches
  a metamethod, and `b > a` is defined as `a < b`;
- the form of an integer literal: decimal or hexadecimal (`31` or `0x1f`).

A carrier's position is a digest of what it compares or denotes (names as a placeholder,
literals by value) and of the four tokens before it, read with every carrier collapsed and
names blanked, so renaming, re-spacing, comments, `;` and parentheses, and the bits
themselves, leave positions where they were. Reading needs neither the original source nor
the script's path: the scanner below is the whole definition of a carrier, used alike to
write and to read, and the writer only touches carriers tree-sitter confirms.
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Callable, Iterator

import attrs

from adapters_protection.edits import Edit
from adapters_protection.syntax import Node

_CONTEXT = 4
_MAX_EXACT = 1 << 53  # integers past this are not all exact as doubles

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>--(?:\[(?P<cl>=*)\[)?[^\n]*)
    |(?P<long>\[(?P<sl>=*)\[)
    |(?P<str>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\.)*`?)
    |(?P<num>0[xX][0-9a-fA-F_]*|0[bB][01_]*|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9_]*)?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\.\.\.|\.\.=?|::|//=?|[=~<>]=|->|[-+*/%^]=|.)""",
    re.VERBOSE | re.DOTALL)

_LITERAL_WORDS = frozenset({"nil", "true", "false"})
_KEYWORDS = frozenset({
    "and", "break", "do", "else", "elseif", "end", "for", "function", "if", "in", "local",
    "not", "or", "repeat", "return", "then", "until", "while"}) | _LITERAL_WORDS
_COMPARE = {"==": ("==", False), "~=": ("~=", False), "<": ("<", False), "<=": ("<=", False),
            ">": ("<", True), ">=": ("<=", True)}
_MIRROR = {"==": "==", "~=": "~=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
# Tokens after which an expression starts afresh: nothing on the left binds to it.
_OPENS = frozenset({"=", "(", ",", "{", "[", "return", "if", "elseif", "while", "until", "and",
                    "or", "+=", "-=", "*=", "/=", "//=", "%=", "^=", "..="})
# Tokens that would bind to an operand on their left more tightly than a comparison does,
# or continue it (calls, indexing, methods).
_BINDS = frozenset({"+", "-", "*", "/", "//", "%", "^", "..", "==", "~=", "<", "<=", ">", ">=",
                    ".", ":", "::", "(", "[", "{", "=", "->", "?"})
_NOT_CONTEXT = frozenset({";", "(", ")", ","})
_DECIMAL = re.compile(r"[0-9]+\Z")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+\Z")


@attrs.frozen
class Token:
    kind: str  # name, keyword, literal (nil/true/false), num, str, op
    text: str
    start: int
    end: int


@attrs.frozen
class Carrier:
    """One bit of a copy: its position id, the bit written, and where (character offsets)."""

    position: bytes
    bit: int
    start: int
    end: int
    tokens: tuple[Token, ...]
    comparison: bool


def tokens(text: str) -> Iterator[Token]:
    """The tokens of a Luau text, comments and whitespace dropped. Linear in the text, and
    total: any text tokenizes (junk becomes single-character tokens)."""
    pos, size = 0, len(text)
    closes: dict[str, int] = {}
    while pos < size:
        m = _TOKEN.match(text, pos)
        assert m is not None  # the last alternative takes any character
        kind = m.lastgroup
        end = m.end()
        if kind in ("comment", "long"):
            level = m.group("cl") if kind == "comment" else m.group("sl")
            if level is not None:
                end = _long_end(text, m.end(), "]" + level + "]", closes)
        if kind == "comment" or kind == "space":
            pos = end
            continue
        word = text[pos:end]
        if kind == "long":
            yield Token("str", word, pos, end)
        elif kind == "name":
            yield Token("literal" if word in _LITERAL_WORDS else
                        "keyword" if word in _KEYWORDS else "name", word, pos, end)
        else:
            yield Token(kind or "op", word, pos, end)
        pos = end


def _long_end(text: str, after: int, close: str, closes: dict[str, int]) -> int:
    """Where a long bracket opened before `after` ends; the text's end when it never closes.
    The last place each closer occurs is looked up once, so unclosed brackets cost nothing
    and the scan stays linear."""
    last = closes.get(close)
    if last is None:
        last = closes[close] = text.rfind(close)
    if last < after:
        return len(text)
    return text.find(close, after) + len(close)


def _integer(text: str) -> tuple[int, int] | None:
    """(value, 1 for hexadecimal) of an integer literal a carrier may re-form."""
    if _DECIMAL.match(text):
        value, form = int(text), 0
    elif _HEX.match(text):
        value, form = int(text, 16), 1
    else:
        return None
    return (value, form) if value < _MAX_EXACT else None


def _canonical(token: Token) -> str | None:
    """What an operand denotes, rename-proof; None for what is not a simple operand."""
    if token.kind == "name":
        return "$"
    if token.kind == "literal":
        return token.text
    if token.kind == "num":
        whole = _integer(token.text)
        if whole is not None:
            return f"#{whole[0]}"
        try:
            return f"#{float(token.text.replace('_', ''))!r}"
        except ValueError:
            return None
    if token.kind == "str" and not token.text.startswith("`"):
        return "s" + hashlib.blake2b(token.text[1:-1].encode(), digest_size=8).hexdigest()
    return None


def _class(token: Token) -> str:
    if token.kind == "name":
        return "$"
    if token.kind == "num":
        return "#"
    if token.kind == "str":
        return "s"
    return token.text


def _digest(*parts: str) -> bytes:
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=12).digest()


def carriers(text: str) -> Iterator[Carrier]:
    """Every carrier in `text`, in order."""
    toks = list(tokens(text))
    context: deque[str] = deque(maxlen=_CONTEXT)
    i, n = 0, len(toks)
    while i < n:
        tok = toks[i]
        if i + 2 < n and toks[i + 1].kind == "op" and toks[i + 1].text in _COMPARE and (
                i > 0 and toks[i - 1].text in _OPENS and toks[i - 1].kind != "str") and (
                i + 3 >= n or toks[i + 3].text not in _BINDS and toks[i + 3].kind != "str"):
            left, right = _canonical(tok), _canonical(toks[i + 2])
            if left is not None and right is not None:
                op, mirrored = _COMPARE[toks[i + 1].text]
                if mirrored:
                    left, right = right, left
                if op in ("==", "~="):
                    bit = 1 if left > right else 0
                    left, right = min(left, right), max(left, right)
                else:
                    bit = 1 if mirrored else 0
                if left != right or op not in ("==", "~="):
                    where = " ".join(context)
                    yield Carrier(_digest("cmp", op, left, right, where), bit, tok.start,
                                  toks[i + 2].end, tuple(toks[i:i + 3]), True)
                    for operand in (tok, toks[i + 2]):
                        yield from _number(operand, f"{where} {op} {left} {right}")
                    context.append("C")
                    i += 3
                    continue
        if tok.kind == "num":
            yield from _number(tok, " ".join(context))
        if tok.text not in _NOT_CONTEXT or tok.kind != "op":
            context.append(_class(tok))
        i += 1


def _number(tok: Token, where: str) -> Iterator[Carrier]:
    whole = _integer(tok.text) if tok.kind == "num" else None
    if whole is not None:
        yield Carrier(_digest("num", str(whole[0]), where), whole[1], tok.start, tok.end,
                      (tok,), False)


def read(text: str) -> Iterator[tuple[bytes, int, int]]:
    """(position, bit, offset) of every carrier in a leaked text."""
    for c in carriers(text):
        yield c.position, c.bit, c.start


def _spaced(before: str, word: str, after: str) -> str:
    """`word` with a space on a side where it would otherwise run into its neighbour."""
    def joins(a: str, b: str) -> bool:
        return bool(a and b) and (a.isalnum() or a == "_") and (b.isalnum() or b == "_")
    return (" " if joins(before, word[0]) else "") + word + (
        " " if joins(word[-1], after) else "")


def mark_edits(text: str, root: Node, wanted: Callable[[bytes], int]) -> list[Edit]:
    """The edits that make every carrier of `text` hold `wanted(position)`. Offsets are
    characters of `text`; edits come back as bytes of its UTF-8 form."""
    data = text.encode()
    offsets = None if len(data) == len(text) else _byte_offsets(text)

    def byte(i: int) -> int:
        return i if offsets is None else offsets[i]

    found = list(carriers(text))
    formed: dict[int, tuple[int, str]] = {}  # number start -> (its end, its wanted form)
    for c in found:
        if not c.comparison and wanted(c.position) != c.bit:
            (tok,) = c.tokens
            start, end = byte(tok.start), byte(tok.end)
            node = root.descendant_for_byte_range(start, end)
            if node is not None and node.type == "number" and (
                    node.start_byte, node.end_byte) == (start, end):
                formed[tok.start] = (tok.end, str(int(tok.text, 16)) if c.bit
                                     else hex(int(tok.text)))
    edits: list[Edit] = []
    for c in found:
        if not c.comparison or wanted(c.position) == c.bit:
            continue
        left, op, right = c.tokens
        if not _is_comparison(root, byte(left.start), byte(left.end), byte(op.start),
                              byte(op.end), byte(right.start), byte(right.end)):
            continue
        new = (formed.pop(right.start, (0, right.text))[1] + _MIRROR[op.text]
               + formed.pop(left.start, (0, left.text))[1])
        new = _spaced(text[c.start - 1:c.start], new, text[c.end:c.end + 1])
        edits.append((byte(c.start), byte(c.end), new.encode()))
    for at, (end, new) in formed.items():
        new = _spaced(text[at - 1:at], new, text[end:end + 1])
        edits.append((byte(at), byte(end), new.encode()))
    return edits


def _is_comparison(root: Node, ls: int, le: int, os: int, oe: int, rs: int, re_: int) -> bool:
    node = root.descendant_for_byte_range(os, oe)
    parent = node.parent if node is not None else None
    if node is None or parent is None or parent.type != "binary_expression" or (
            parent.child_count != 3):
        return False
    left, op, right = parent.children
    return ((left.start_byte, left.end_byte, op.start_byte, op.end_byte, right.start_byte,
             right.end_byte) == (ls, le, os, oe, rs, re_)
            and left.type in _OPERAND_NODES and right.type in _OPERAND_NODES)


_OPERAND_NODES = frozenset({"identifier", "number", "string", "nil", "true", "false"})


def _byte_offsets(text: str) -> list[int]:
    out, total = [], 0
    for ch in text:
        out.append(total)
        total += len(ch.encode())
    out.append(total)
    return out
