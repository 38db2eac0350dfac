"""`watermark`: one license's code bits written into choices a renamer, a formatter and a
minifier keep, and read back in one linear pass over a leaked text.

Three kinds of carrier, each holding one bit:
- the orientation of a comparison: `x == 5` or `5 == x`, `s == K[3]` or `K[3] == s`,
  `a < b` or `b > a` (likewise `~=`, `<=`/`>=`). One operand is a name or a literal, which
  can neither fail nor have an effect, and the other one of those, a field `t.f`, an index
  by a literal `t[1]` or a length `#t`: swapping them reorders no effects, and `b > a` is
  defined as `a < b`. (An `==` between two tables with an `__eq` metamethod that is not
  symmetric would see its arguments swapped; such metamethods are not written in practice);
- the form of an integer literal: decimal or hexadecimal (`31` or `0x1f`);
- the form of a field access: `t.name` or `t["name"]`.

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
from adapters_protection.strings import BadEscape, decode_quoted
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
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
    kind: str  # comparison, number or index
    op_index: int = 0  # a comparison's operator, in `tokens`


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


def _literal(token: Token) -> str | None:
    """What a literal denotes, whatever its form; None for what is not a literal."""
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
    if token.kind == "str" and token.text[0] in "\"'":
        return "s" + hashlib.blake2b(_string_value(token.text), digest_size=8).hexdigest()
    if token.kind == "str" and token.text.startswith("["):
        return "s" + hashlib.blake2b(token.text.encode(), digest_size=8).hexdigest()
    return None


def _string_value(quoted: str) -> bytes:
    try:
        return decode_quoted(quoted[1:-1])
    except BadEscape:
        return quoted.encode()


def _field(toks: list[Token], i: int) -> tuple[str, int] | None:
    """The field name and form (1 for `["name"]`) of an access starting at toks[i], which
    follows a name, `)` or `]`."""
    tok = toks[i]
    if tok.text == "." and tok.kind == "op" and i + 1 < len(toks) and toks[i + 1].kind in (
            "name", "keyword", "literal"):
        name = toks[i + 1].text
        return (name, 0) if toks[i + 1].kind == "name" and _fieldable(name) else None
    if tok.text == "[" and i + 2 < len(toks) and toks[i + 1].kind == "str" and (
            toks[i + 2].text == "]") and toks[i + 1].text[0] in "\"'":
        name = _string_value(toks[i + 1].text).decode("latin-1")
        if _IDENTIFIER.match(name) and _fieldable(name):
            return name, 1
    return None


def _fieldable(name: str) -> bool:
    """Names written either way; contextual keywords are left alone."""
    return name not in _KEYWORDS and name not in ("continue", "type", "export", "typeof")


def _operand(toks: list[Token], i: int) -> tuple[int, str, bool] | None:
    """(end index, what it denotes, whether it is plain) of a comparison operand at i."""
    if i >= len(toks):
        return None
    tok = toks[i]
    plain = _literal(tok)
    if plain is not None:
        return i + 1, plain, True
    if tok.text == "#" and tok.kind == "op" and i + 1 < len(toks) and toks[i + 1].kind == "name":
        return i + 2, "#$", False
    if tok.kind != "name":
        return None
    if i + 1 < len(toks):
        field = _field(toks, i + 1)
        if field is not None:
            return i + 1 + (2 if field[1] == 0 else 3), f"$.{field[0]}", False
        if toks[i + 1].text == "[" and i + 3 < len(toks) and toks[i + 3].text == "]":
            index = _literal(toks[i + 2])
            if index is not None:
                return i + 4, f"$[{index}]", False
    return i + 1, "$", True


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
        found = _comparison(toks, i, context)
        if found is not None:
            yield from found[0]
            context.append("C")
            i = found[1]
            continue
        tok = toks[i]
        where = " ".join(context)
        if tok.kind == "num":
            yield from _number(tok, where)
        if i > 0 and (toks[i - 1].kind == "name" or toks[i - 1].text in (")", "]")):
            field = _field(toks, i)
            if field is not None:
                size = 2 if field[1] == 0 else 3
                yield Carrier(_digest("idx", field[0], where), field[1], tok.start,
                              toks[i + size - 1].end, tuple(toks[i:i + size]), "index")
                context.append("." + field[0])
                i += size
                continue
        if tok.text not in _NOT_CONTEXT or tok.kind != "op":
            context.append(_class(tok))
        i += 1


def _comparison(toks: list[Token], i: int, context: deque[str]
                ) -> tuple[list[Carrier], int] | None:
    """The carriers of a comparison starting at toks[i] (its own and its operands'), and
    the index after it; None when none starts there."""
    if i == 0 or toks[i - 1].text not in _OPENS or toks[i - 1].kind == "str":
        return None
    x = _operand(toks, i)
    if x is None or x[0] >= len(toks):
        return None
    op_tok = toks[x[0]]
    if op_tok.kind != "op" or op_tok.text not in _COMPARE:
        return None
    y = _operand(toks, x[0] + 1)
    if y is None or not (x[2] or y[2]):
        return None
    after = y[0]
    if after < len(toks) and (toks[after].text in _BINDS or toks[after].kind == "str"):
        return None
    op, mirrored = _COMPARE[op_tok.text]
    left, right = (y[1], x[1]) if mirrored else (x[1], y[1])
    if op in ("==", "~="):
        if left == right:
            return None
        bit = 1 if left > right else 0
        left, right = min(left, right), max(left, right)
    else:
        bit = 1 if mirrored else 0
    where = " ".join(context)
    inner = f"{where} {op} {left} {right}"
    out = [Carrier(_digest("cmp", op, left, right, where), bit, toks[i].start,
                   toks[after - 1].end, tuple(toks[i:after]), "comparison", x[0] - i)]
    for j in range(i, after):
        tok = toks[j]
        if tok.kind == "num":
            out += _number(tok, inner)
        if j > i and (toks[j - 1].kind == "name") and toks[j].text in (".", "["):
            field = _field(toks, j)
            if field is not None:
                size = 2 if field[1] == 0 else 3
                out.append(Carrier(_digest("idx", field[0], inner), field[1], tok.start,
                                   toks[j + size - 1].end, tuple(toks[j:j + size]), "index"))
    return out, after


def _number(tok: Token, where: str) -> Iterator[Carrier]:
    whole = _integer(tok.text) if tok.kind == "num" else None
    if whole is not None:
        yield Carrier(_digest("num", str(whole[0]), where), whole[1], tok.start, tok.end,
                      (tok,), "number")


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
    """The edits that make every carrier of `text` hold `wanted(position)`, each confirmed
    on the tree first. Offsets are characters of `text`; edits are bytes of its UTF-8."""
    data = text.encode()
    offsets = None if len(data) == len(text) else _byte_offsets(text)

    def byte(i: int) -> int:
        return i if offsets is None else offsets[i]

    found = list(carriers(text))
    inner: dict[int, tuple[int, str]] = {}  # start -> (end, new text) of a number or field
    for c in found:
        if c.kind == "comparison" or wanted(c.position) == c.bit:
            continue
        new = _reformed(c, root, byte)
        if new is not None:
            inner[c.start] = (c.end, new)
    edits: list[Edit] = []
    for c in found:
        if c.kind != "comparison" or wanted(c.position) == c.bit:
            continue
        x_end = c.tokens[c.op_index - 1].end
        op = c.tokens[c.op_index]
        y_start = c.tokens[c.op_index + 1].start
        if not _is_comparison(root, byte(c.start), byte(x_end), byte(op.start), byte(op.end),
                              byte(y_start), byte(c.end)):
            continue
        new = (_with(text, y_start, c.end, inner) + _MIRROR[op.text]
               + _with(text, c.start, x_end, inner))
        new = _spaced(text[c.start - 1:c.start], new, text[c.end:c.end + 1])
        edits.append((byte(c.start), byte(c.end), new.encode()))
    for at, (end, new) in inner.items():
        new = _spaced(text[at - 1:at], new, text[end:end + 1])
        edits.append((byte(at), byte(end), new.encode()))
    return edits


def _with(text: str, start: int, end: int, inner: dict[int, tuple[int, str]]) -> str:
    """text[start:end] with the re-formed numbers and fields inside it (taken out of
    `inner`, which the comparison's edit now covers)."""
    out, pos = [], start
    for at in sorted(a for a in inner if start <= a < end):
        stop, new = inner.pop(at)
        out += [text[pos:at], new]
        pos = stop
    out.append(text[pos:end])
    return "".join(out)


def _reformed(c: Carrier, root: Node, byte: Callable[[int], int]) -> str | None:
    """A number or field access in its other form, where the tree confirms it."""
    start, end = byte(c.start), byte(c.end)
    if c.kind == "number":
        node = root.descendant_for_byte_range(start, end)
        if node is None or node.type != "number" or (node.start_byte, node.end_byte) != (
                start, end):
            return None
        tok = c.tokens[0]
        return str(int(tok.text, 16)) if c.bit else hex(int(tok.text))
    opener = root.descendant_for_byte_range(start, start + 1)
    access = opener.parent if opener is not None else None
    wanted_type = "bracket_index_expression" if c.bit else "dot_index_expression"
    if access is None or access.type != wanted_type or access.end_byte != end:
        return None
    top = access
    while top.parent is not None and top.parent.type == "dot_index_expression":
        top = top.parent
    if top.parent is None or top.parent.type == "function_declaration":
        return None
    if c.bit:
        name = _string_value(c.tokens[1].text).decode("latin-1")
        return "." + name
    return f'["{c.tokens[1].text}"]'


def _is_comparison(root: Node, ls: int, le: int, os: int, oe: int, rs: int, re_: int) -> bool:
    node = root.descendant_for_byte_range(os, oe)
    parent = node.parent if node is not None else None
    if node is None or parent is None or parent.type != "binary_expression" or (
            parent.child_count != 3):
        return False
    left, op, right = parent.children
    return (left.start_byte, left.end_byte, op.start_byte, op.end_byte, right.start_byte,
            right.end_byte) == (ls, le, os, oe, rs, re_)


def _byte_offsets(text: str) -> list[int]:
    out, total = [], 0
    for ch in text:
        out.append(total)
        total += len(ch.encode())
    out.append(total)
    return out
