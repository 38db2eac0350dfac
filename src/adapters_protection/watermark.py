"""`watermark`: one license's code bits written into choices a renamer, a formatter and a
minifier keep, and read back in one linear pass over a leaked text.

Three kinds of carrier:
- the orientation of a comparison: `x == 5` or `5 == x`, `s == K[3]` or `K[3] == s`,
  `a < b` or `b > a` (likewise `~=`, `<=`/`>=`). One operand is a name or a literal, which
  can neither fail nor have an effect, and the other one of those, a field `t.f`, an index
  by a literal `t[1]` or a length `#t`: swapping them reorders no effects, and `b > a` is
  defined as `a < b`. (An `==` between two tables with an `__eq` metamethod that is not
  symmetric would see its arguments swapped; such metamethods are not written in practice);
- the form of an integer literal, two bits: decimal or hexadecimal, and with a leading
  zero or without (`31`, `031`, `0x1f` or `0x01f`);
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
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import Final

from adapters_protection.edits import Edit
from adapters_protection.strings import BadEscape, decode_quoted
from adapters_protection.syntax import Node

_CONTEXT = 4
_MAX_EXACT = 1 << 53  # integers past this are not all exact as doubles

# One token after optional whitespace; the groups, in order: comment (with the level of a
# long one), long string opener (with its level), quoted string, number, name, operator.
_TOKEN = re.compile(
    r"""\s*(?:(--(?:\[(=*)\[)?[^\n]*)
    |(\[(=*)\[)
    |("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`(?:[^`\\]|\\.)*`?)
    |(0[xX][0-9a-fA-F_]*|0[bB][01_]*|(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][+-]?[0-9_]*)?)
    |([A-Za-z_][A-Za-z0-9_]*)
    |(\.\.\.|\.\.=?|::|//=?|[=~<>]=|->|[-+*/%^]=|\S))""",
    re.VERBOSE | re.DOTALL)
_COMMENT, _COMMENT_LEVEL, _LONG, _LONG_LEVEL, _STR, _NUM, _NAME, _OP = range(1, 9)
_KINDS = {_STR: "str", _NUM: "num", _OP: "op"}

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


# A token: (kind, text, start, end), a plain tuple because a text holds millions of them.
# kind is name, keyword, literal (nil/true/false), num, str or op.
Token = tuple[str, str, int, int]


# A carrier, one bit of a copy: (position id, the bit written, start, end (character
# offsets), its tokens, kind (comparison, number, pad or index), and for a comparison its
# operator's index in its tokens). A plain tuple, read through the indexes below: a text
# holds hundreds of thousands, and the garbage collector stops tracking a plain tuple of
# plain values (not a named tuple), which otherwise walks them all at every full collection
# (two thirds of a second in a 4 MiB copy).
Carrier = tuple[bytes, int, int, int, tuple[Token, ...], str, int]
POSITION: Final = 0
BIT: Final = 1
START: Final = 2
END: Final = 3
TOKENS: Final = 4
KIND: Final = 5
OP_INDEX: Final = 6


def tokens(text: str) -> Iterator[Token]:
    """The tokens of a Luau text, comments and whitespace dropped. Linear in the text, and
    total: any text tokenizes (junk becomes single-character tokens)."""
    closes: dict[str, int] = {}
    pos = 0
    while True:
        for m in _TOKEN.finditer(text, pos):
            group = m.lastindex or _OP  # every alternative is a group
            if group >= _STR:  # a token that ends the match: its start follows from its end
                word = m.group(group)
                end = m.end()
                if group == _NAME:
                    yield ("name" if word not in _KEYWORDS else
                           "literal" if word in _LITERAL_WORDS else "keyword",
                           word, end - len(word), end)
                else:
                    yield (_KINDS[group], word, end - len(word), end)
            elif group <= _COMMENT_LEVEL:
                level = m.group(_COMMENT_LEVEL)
                if level is not None:
                    pos = _long_end(text, m.end(_COMMENT_LEVEL) + 1, "]" + level + "]",
                                    closes)
                    break
            else:  # a long string
                start = m.start(group)
                pos = _long_end(text, m.end(), "]" + m.group(_LONG_LEVEL) + "]", closes)
                yield ("str", text[start:pos], start, pos)
                break
        else:
            return


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


@lru_cache(maxsize=1 << 12)  # a script writes the same few integers over and over
def _integer(text: str) -> tuple[int, int, int, str] | None:
    """(value, 1 for hexadecimal, 1 for a leading zero, the value in decimal) of an
    integer literal a carrier may re-form."""
    if _DECIMAL.match(text):
        value, form, pad = int(text), 0, len(text) > 1 and text[0] == "0"
    elif _HEX.match(text):
        value, form, pad = int(text, 16), 1, len(text) > 3 and text[2] == "0"
    else:
        return None
    return (value, form, int(pad), str(value)) if value < _MAX_EXACT else None


def _written(value: int, form: int, pad: int) -> str:
    zero = "0" if pad else ""
    return f"0x{zero}{value:x}" if form else f"{zero}{value}"


def _literal(token: Token) -> str | None:
    """What a literal denotes, whatever its form; None for what is not a literal."""
    if token[0] == "literal":
        return token[1]
    if token[0] == "num":
        whole = _integer(token[1])
        if whole is not None:
            return "#" + whole[3]
        try:
            return f"#{float(token[1].replace('_', ''))!r}"
        except ValueError:
            return None
    if token[0] == "str" and token[1][0] in "\"'":
        return "s" + hashlib.blake2b(_string_value(token[1]), digest_size=8).hexdigest()
    if token[0] == "str" and token[1].startswith("["):
        return "s" + hashlib.blake2b(token[1].encode(), digest_size=8).hexdigest()
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
    if tok[1] == "." and tok[0] == "op" and i + 1 < len(toks) and toks[i + 1][0] in (
            "name", "keyword", "literal"):
        name = toks[i + 1][1]
        return (name, 0) if toks[i + 1][0] == "name" and _fieldable(name) else None
    if tok[1] == "[" and i + 2 < len(toks) and toks[i + 1][0] == "str" and (
            toks[i + 2][1] == "]") and toks[i + 1][1][0] in "\"'":
        name = _string_value(toks[i + 1][1]).decode("latin-1")
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
    if tok[1] == "#" and tok[0] == "op" and i + 1 < len(toks) and toks[i + 1][0] == "name":
        return i + 2, "#$", False
    if tok[0] != "name":
        return None
    if i + 1 < len(toks):
        field = _field(toks, i + 1)
        if field is not None:
            return i + 1 + (2 if field[1] == 0 else 3), f"$.{field[0]}", False
        if toks[i + 1][1] == "[" and i + 3 < len(toks) and toks[i + 3][1] == "]":
            index = _literal(toks[i + 2])
            if index is not None:
                return i + 4, f"$[{index}]", False
    return i + 1, "$", True


_CLASSES = {"name": "$", "num": "#", "str": "s"}
# What can follow an operand's first token when a comparison starts there.
_AFTER_FIRST = frozenset(_COMPARE) | {".", "["}


def _digest(*parts: str) -> bytes:
    return _digest_of("\0".join(parts))


def _digest_of(joined: str) -> bytes:
    return hashlib.blake2b(joined.encode(), digest_size=12).digest()


_LOOKAHEAD = 16  # more than any carrier spans
_REFILL = 1 << 15


def carriers(text: str) -> Iterator[Carrier]:
    """Every carrier in `text`, in order, holding only a window of tokens at a time."""
    stream = tokens(text)
    toks: list[Token] = []
    size = 0
    exhausted = False
    context: deque[str] = deque(maxlen=_CONTEXT)
    where = None  # " ".join(context), made when a carrier needs it and until it changes
    append = context.append
    i = 0
    while True:
        if not exhausted and i + _LOOKAHEAD >= size:
            i, exhausted = _refill(toks, i, stream)
            size = len(toks)
        if i >= size:
            return
        tok = toks[i]
        kind, word = tok[0], tok[1]
        # _may_compare, written out: it is asked at every token
        if i and toks[i - 1][1] in _OPENS and i + 2 < size and (
                toks[i + 1][1] in _AFTER_FIRST or word == "#"):
            found = _comparison(toks, i, context)
            if found is not None:
                yield from found[0]
                append("C")
                where = None
                i = found[1]
                continue
        if kind == "num":
            if where is None:
                where = " ".join(context)
            yield from _number(tok, where)
        elif (word == "." or word == "[") and _after_value(toks, i):
            if where is None:
                where = " ".join(context)
            index = _index(toks, i, where)
            if index is not None:
                yield index[0]
                append("." + index[1])
                where = None
                i += len(index[0][TOKENS])
                continue
        if kind != "op" or word not in _NOT_CONTEXT:
            append(_CLASSES.get(kind, word))
            where = None
        i += 1


def _refill(toks: list[Token], i: int, stream: Iterator[Token]) -> tuple[int, bool]:
    """Drops the tokens behind the window and reads more; the new index of toks[i], and
    whether the stream is exhausted."""
    keep = max(i - 1, 0)
    del toks[:keep]
    i -= keep
    before = len(toks)
    toks.extend(itertools.islice(stream, _REFILL))
    return i, len(toks) - before < _REFILL


def _may_compare(toks: list[Token], i: int) -> bool:
    return bool(i) and toks[i - 1][1] in _OPENS and i + 2 < len(toks) and (
        toks[i + 1][1] in _AFTER_FIRST or toks[i][1] == "#")


def _after_value(toks: list[Token], i: int) -> bool:
    return bool(i) and (toks[i - 1][0] == "name" or toks[i - 1][1] in (")", "]"))


def _index(toks: list[Token], i: int, where: str) -> tuple[Carrier, str] | None:
    """The carrier of a field access at toks[i] (`.name` or `["name"]`), and the field."""
    field = _field(toks, i)
    if field is None:
        return None
    size = 2 if field[1] == 0 else 3
    return (_digest("idx", field[0], where), field[1], toks[i][2], toks[i + size - 1][3],
            tuple(toks[i:i + size]), "index", 0), field[0]


def _comparison(toks: list[Token], i: int, context: deque[str]
                ) -> tuple[list[Carrier], int] | None:
    """The carriers of a comparison starting at toks[i] (its own and its operands'), and
    the index after it; None when none starts there."""
    parsed = _compared(toks, i)
    if parsed is None:
        return None
    x, y, op_tok = parsed
    after = y[0]
    ordered = _ordered(op_tok[1], x[1], y[1])
    if ordered is None:
        return None
    op, left, right, bit = ordered
    where = " ".join(context)
    inner = f"{where} {op} {left} {right}"
    out: list[Carrier] = [(_digest("cmp", op, left, right, where), bit, toks[i][2],
                           toks[after - 1][3], tuple(toks[i:after]), "comparison", x[0] - i)]
    for j in range(i, after):
        tok = toks[j]
        if tok[0] == "num":
            out += _number(tok, inner)
        if j > i and (toks[j - 1][0] == "name") and toks[j][1] in (".", "["):
            index = _index(toks, j, inner)
            if index is not None:
                out.append(index[0])
    return out, after


Operand = tuple[int, str, bool]


def _compared(toks: list[Token], i: int) -> tuple[Operand, Operand, Token] | None:
    """The two operands and the operator of a comparison starting at toks[i], or None."""
    if i == 0 or toks[i - 1][1] not in _OPENS or toks[i - 1][0] == "str":
        return None
    # An operand is at most four tokens, so the operator is among the next four: most
    # places asked about (`(K[1]or ...`, `= t.f`) end here.
    if not any(t[1] in _COMPARE for t in toks[i + 1:i + 5]):
        return None
    x = _operand(toks, i)
    if x is None or x[0] >= len(toks):
        return None
    op_tok = toks[x[0]]
    if op_tok[0] != "op" or op_tok[1] not in _COMPARE:
        return None
    y = _operand(toks, x[0] + 1)
    if y is None or not (x[2] or y[2]):
        return None
    after = y[0]
    if after < len(toks) and (toks[after][1] in _BINDS or toks[after][0] == "str"):
        return None
    return x, y, op_tok


def _ordered(written: str, x: str, y: str) -> tuple[str, str, str, int] | None:
    """The comparison in its canonical form: (operator, left, right, the bit it carries);
    None for an equality of two same operands, which carries nothing."""
    op, mirrored = _COMPARE[written]
    left, right = (y, x) if mirrored else (x, y)
    if op not in ("==", "~="):
        return op, left, right, 1 if mirrored else 0
    if left == right:
        return None
    return op, min(left, right), max(left, right), 1 if left > right else 0


def _number(tok: Token, where: str) -> list[Carrier]:
    whole = _integer(tok[1]) if tok[0] == "num" else None
    if whole is None:
        return []
    value, alone = whole[3], (tok,)
    return [(_digest_of(f"num\0{value}\0{where}"), whole[1], tok[2], tok[3], alone, "number", 0),
            (_digest_of(f"pad\0{value}\0{where}"), whole[2], tok[2], tok[3], alone, "pad", 0)]


def read(text: str) -> Iterator[tuple[bytes, int, int]]:
    """(position, bit, offset) of every carrier in a leaked text."""
    for c in carriers(text):
        yield c[POSITION], c[BIT], c[START]


def _spaced(before: str, word: str, after: str) -> str:
    """`word` with a space on a side where it would otherwise run into its neighbour (two
    words, or `[` before a long string, which would read as one long bracket)."""
    def joins(a: str, b: str) -> bool:
        return bool(a and b) and (((a.isalnum() or a == "_") and (b.isalnum() or b == "_"))
                                  or (a == "[" and b == "["))
    return (" " if joins(before, word[0]) else "") + word + (
        " " if joins(word[-1], after) else "")


# A token boundary (a character of the marked text; True for an end) in the tree it is
# confirmed on.
_At = Callable[[int, bool], int]


def mark_edits(text: str, root: Node,
               code: Callable[[Sequence[bytes]], Sequence[int]],
               located: Callable[[int, bool], int] | None = None) -> list[Edit]:
    """The edits that make every carrier of `text` hold the license's bit at its position
    (`code` gives the bits of many positions at once), each confirmed on the tree first.
    Offsets are characters of `text`; edits are bytes of its UTF-8. `root` is the tree of
    `text`, or of a text with the same tokens, differently spaced: then `located` gives
    where a token's start (or, with True, its end) at a byte of `text` is in that one."""
    data = text.encode()
    offsets = None if len(data) == len(text) else _byte_offsets(text)

    def byte(i: int) -> int:
        return i if offsets is None else offsets[i]

    def through_bytes(i: int, end: bool) -> int:
        return byte(i) if located is None else located(byte(i), end)

    # Where a token boundary at character i of `text` is in the tree (asked once or more
    # per edit: where characters are bytes, `located` itself).
    tree_at: _At = located if offsets is None and located is not None else through_bytes
    found = list(carriers(text))
    # A position met twice gets the same bit both times: the code is a function of it.
    wanted = code([c[POSITION] for c in found])
    inner, comparisons = _inner_edits(found, wanted, root, tree_at)
    edits: list[Edit] = []
    for k in comparisons:
        edit = _mirrored(found[k], text, root, byte, tree_at, inner)
        if edit is not None:
            edits.append(edit)
    for at, (end, new) in inner.items():
        new = _spaced(text[at - 1:at], new, text[end:end + 1])
        edits.append((byte(at), byte(end), new.encode()))
    return edits


def _inner_edits(found: list[Carrier], wanted: Sequence[int], root: Node, at: _At
                 ) -> tuple[dict[int, tuple[int, str]], list[int]]:
    """start -> (end, new text) of each number or field written anew for its bits; and
    the comparisons (indexes in `found`) to write the other way round."""
    inner: dict[int, tuple[int, str]] = {}
    comparisons = []
    for k, c in enumerate(found):
        kind = c[KIND]
        if kind == "number":  # its "pad" carrier comes right after it
            tok = c[TOKENS][0]
            whole = _integer(tok[1])
            assert whole is not None
            new = _written(whole[0], wanted[k], wanted[k + 1])
            if new != tok[1] and _confirmed_number(c, root, at):
                inner[c[START]] = (c[END], new)
        elif kind == "comparison":
            if wanted[k] != c[BIT]:
                comparisons.append(k)
        elif kind == "index" and wanted[k] != c[BIT]:
            field = _reformed(c, root, at)
            if field is not None:
                inner[c[START]] = (c[END], field)
    return inner, comparisons


def _mirrored(c: Carrier, text: str, root: Node, byte: Callable[[int], int], at: _At,
              inner: dict[int, tuple[int, str]]) -> Edit | None:
    """The edit writing comparison `c` the other way round (with the re-formed numbers
    and fields inside it), once the tree confirms it is one."""
    _, _, start, end, toks, _, op_index = c
    x_end = toks[op_index - 1][3]
    op = toks[op_index]
    y_start = toks[op_index + 1][2]
    if not _is_comparison(root, at(start, False), at(x_end, True), at(op[2], False),
                          at(op[3], True), at(y_start, False), at(end, True)):
        return None
    starts = [t[2] for t in toks]
    new = (_with(text, y_start, end, inner, starts) + _MIRROR[op[1]]
           + _with(text, start, x_end, inner, starts))
    new = _spaced(text[start - 1:start], new, text[end:end + 1])
    return byte(start), byte(end), new.encode()


def _with(text: str, start: int, end: int, inner: dict[int, tuple[int, str]],
          starts: list[int]) -> str:
    """text[start:end] with the re-formed numbers and fields inside it (taken out of
    `inner`, which the comparison's edit now covers); `starts` are its tokens' offsets."""
    out, pos = [], start
    for at in [a for a in starts if start <= a < end and a in inner]:
        stop, new = inner.pop(at)
        out += [text[pos:at], new]
        pos = stop
    out.append(text[pos:end])
    return "".join(out)


def _confirmed_number(c: Carrier, root: Node, at: _At) -> bool:
    start = at(c[START], False)
    if start < 0:
        return False
    end = start + c[END] - c[START]  # a number is ASCII, and copied whole by strip
    node = root.descendant_for_byte_range(start, end)
    return node is not None and node.type == "number" and (
        node.start_byte, node.end_byte) == (start, end)


def _reformed(c: Carrier, root: Node, at: _At) -> str | None:
    """A field access in its other form, where the tree confirms it."""
    start, end = at(c[START], False), at(c[END], True)
    opener = root.descendant_for_byte_range(start, start + 1)
    access = opener.parent if opener is not None else None
    wanted_type = "bracket_index_expression" if c[BIT] else "dot_index_expression"
    if access is None or access.type != wanted_type or access.end_byte != end:
        return None
    top = access
    while top.parent is not None and top.parent.type == "dot_index_expression":
        top = top.parent
    if top.parent is None or top.parent.type == "function_declaration":
        return None
    if c[BIT]:
        name = _string_value(c[TOKENS][1][1]).decode("latin-1")
        return "." + name
    return f'["{c[TOKENS][1][1]}"]'


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
