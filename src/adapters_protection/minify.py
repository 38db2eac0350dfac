"""`strip`: drop comments and collapse whitespace.

The tree says where comments, strings and numbers are (a query, run by tree-sitter); the
code between them is cut at its whitespace into chunks that were already written without
space between their tokens, so only the joins between chunks need a decision. A space is
written only where the two sides would otherwise lex as something else (`a b`, `1 ..`,
`- -`, `[ [`, `> =`, `{ {` inside an interpolation, ...). A statement that begins with `(`
gets a `;` before it: on one line, `f() (g)()` would call the result of `f()`, and Luau
refuses the same on two lines as ambiguous. Leading `--!` directives (`--!strict`,
`--!native`) are kept, each on its own line, because Luau reads them only at the top.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

import tree_sitter

from adapters_protection.syntax import LANGUAGE, Node, is_interpolated

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DIGITS = frozenset(b"0123456789")
_OPERATORS = frozenset(b"+-*/%^#=<>~:.&|!?@")
_CHUNK = re.compile(rb"[^ \t\n\r\f\v]+")  # code between whitespace
_DOT = ord(".")
_SPECIAL = tree_sitter.Query(LANGUAGE, """
(comment) @comment
(hash_bang_line) @bang
(string) @string
(parenthesized_expression) @parenthesized
""")
_BLOCKS = frozenset({"block", "chunk"})


def _needs_space(prev: bytes, prev_number: bool, cur: bytes) -> bool:
    a, b = prev[-1], cur[0]
    if a in _WORD and b in _WORD:
        return True
    if prev_number and (b in _WORD or b in b".+-"):
        return True
    if a == ord(".") and (b == ord(".") or b in _DIGITS):
        return True
    if a == ord("[") and b in b"[=":
        return True
    if a in _OPERATORS and b in _OPERATORS:
        # `=-1`, `*#t` lex fine; `--` starts a comment; every other pair is kept apart.
        return not (b in b"-#" and a != ord("-"))
    # Luau refuses `{{` and `}}` inside interpolated strings; elsewhere the space is harmless.
    return a == b and a in b"{}"


# Pieces of the output: verbatim text, and how it joins its neighbours.
_CODE, _ATOM, _DIRECTIVE, _SEMICOLON = range(4)


def _pieces(data: bytes, root: Node) -> list[tuple[int, int, int]]:
    """(start, end, kind) of everything that is not code, in source order. Numbers are
    code: only whether one ends a chunk matters (`_ends_in_number`)."""
    captures = tree_sitter.QueryCursor(_SPECIAL).captures(root)
    pieces: list[tuple[int, int, int]] = []
    code_seen = _code_start(root, len(data))
    comments, bangs = captures.get("comment", []), captures.get("bang", [])
    for node in comments:
        if node.start_byte < code_seen and (node.text or b"").startswith(b"--!"):
            pieces.append((node.start_byte, node.end_byte, _DIRECTIVE))
        else:
            pieces.append((node.start_byte, node.end_byte, -1))
    for node in bangs:
        pieces.append((node.start_byte, node.end_byte, _DIRECTIVE))
    for node in captures.get("string", []):
        pieces += _string_pieces(node)
    unsure = {n.end_byte for n in comments + bangs}
    pieces += [(at, at, _SEMICOLON) for at in _paren_statements(
        data, captures.get("parenthesized", []), unsure)]
    # Comments inside strings cannot be; strings inside comments are not captured.
    pieces.sort()
    return pieces


def _code_start(root: Node, otherwise: int) -> int:
    """Where the script's first statement (or `#!` line) starts: `--!` directives are the
    comments before it."""
    for i in range(root.named_child_count):
        first = root.named_child(i)
        if first is not None and first.type != "comment":
            return first.start_byte
    return otherwise


def _string_pieces(node: Node) -> list[tuple[int, int, int]]:
    if not is_interpolated(node):
        return [(node.start_byte, node.end_byte, _ATOM)]
    # The literal text around `{...}` parts is verbatim; the parts are code.
    pieces, pos = [], node.start_byte
    for child in node.named_children:
        if child.type == "interpolation":
            brace_open, brace_close = child.children[0], child.children[-1]
            pieces.append((pos, brace_open.end_byte, _ATOM))
            pos = brace_close.start_byte
    pieces.append((pos, node.end_byte, _ATOM))
    return pieces


# Bytes an expression's `(` may follow but a statement's never does, and words likewise.
# (Not `.`: a number may end in one, `1.`, and a statement follow it.)
_BEFORE_EXPRESSION = frozenset(b"=,([{+-*/%^#<>~")
_WORDS_BEFORE_EXPRESSION = frozenset({
    b"if", b"elseif", b"return", b"and", b"or", b"not", b"while", b"until", b"in"})
_SPACE = frozenset(b" \t\n\r\f\v")


def _paren_statements(data: bytes, parenthesized: list[Node], unsure: set[int]) -> list[int]:
    """Where a statement that begins with `(` follows another: it needs a `;` before it.
    Such a statement is the outermost ancestor of a parenthesized expression starting at
    the same byte. Most parenthesized expressions are seen to be inside one by what comes
    before them (`= (`, `return (`), which is read first: a node's parent is found by
    walking down from the root each time."""
    out = []
    for node in parenthesized:
        at = node.start_byte
        if _follows_expression_start(data, at, unsure):
            continue
        parent = node.parent
        while parent is not None and parent.type not in _BLOCKS and parent.start_byte == at:
            node, parent = parent, parent.parent
        if parent is None or parent.type not in _BLOCKS:
            continue
        sibling = node.prev_named_sibling
        while sibling is not None and sibling.type == "comment":
            sibling = sibling.prev_named_sibling
        if sibling is not None:
            out.append(at)
    return out


def _follows_expression_start(data: bytes, at: int, unsure: set[int]) -> bool:
    """Whether the code before `at` (whitespace aside) is an operator, an opener or a word
    that an expression follows; False when unsure (a comment or `#!` line ends there)."""
    end = at
    while end and data[end - 1] in _SPACE:
        end -= 1
    if not end or end in unsure:
        return False
    if data[end - 1] in _BEFORE_EXPRESSION:
        return True
    start = end
    while start and data[start - 1] in _WORD:
        start -= 1
    return data[start:end] in _WORDS_BEFORE_EXPRESSION and (
        not start or data[start - 1] not in b".:")


def _ends_in_number(chunk: bytes) -> bool:
    """Whether code written without whitespace ends with a number: its last run of word
    characters starts with a digit (names cannot), or it ends `1.`."""
    end = len(chunk)
    if chunk[-1] == _DOT:
        end -= 1
        if not end or chunk[end - 1] not in _WORD:
            return False
    start = end
    while start and chunk[start - 1] in _WORD:
        start -= 1
    return start < end and chunk[start] in _DIGITS


# _needs_space for every pair of bytes, the number rule aside: strip asks it at every join,
# and one index into this table costs a fraction of the function call.
_JOINS = bytes(_needs_space(bytes([a]), False, bytes([b]))
               for a in range(256) for b in range(256))
_AFTER_NUMBER = _WORD | frozenset(b".+-")  # what _needs_space keeps apart from a number


def strip(data: bytes, root: Node) -> bytes:
    return stripped(data, root)[0]


Located = Callable[[int, bool], int]


def stripped(data: bytes, root: Node) -> tuple[bytes, Located]:
    """`strip`'s output, and where each of its tokens is in `data`: given the offset of a
    token's first byte in the output (or of its end, with True), the same in `data`. Tokens
    are copied whole, so a tree of `data` answers for the output (the watermark confirms
    its edits on it, and the output need not be parsed for that)."""
    out: list[bytes] = []
    # The last byte written (-1 before any) and whether it ended a number: all that decides
    # the space before the next piece (see _needs_space).
    last, number_before = -1, False
    size = 0  # bytes written so far
    # Where each piece copied from `data` starts in the output, and in `data`.
    out_starts: list[int] = []
    data_starts: list[int] = []

    def put(text: bytes, at: int) -> None:
        nonlocal last, number_before, size
        first = text[0]
        if last >= 0 and (_JOINS[last << 8 | first]
                          or (number_before and first in _AFTER_NUMBER)):
            out.append(b" ")
            size += 1
        out_starts.append(size)
        data_starts.append(at)
        out.append(text)
        size += len(text)
        last, number_before = text[-1], False

    def code(lo: int, hi: int) -> None:
        nonlocal last, number_before, size
        for chunk in _CHUNK.finditer(data, lo, hi):
            # put(chunk), written out: most pieces of a script are these
            text = chunk.group()
            first = text[0]
            if last >= 0 and (_JOINS[last << 8 | first]
                              or (number_before and first in _AFTER_NUMBER)):
                out.append(b" ")
                size += 1
            out_starts.append(size)
            data_starts.append(chunk.start())
            out.append(text)
            size += len(text)
            last = text[-1]
            # A number decides a join only when it ends the chunk: digits or `1.`.
            number_before = (last in _WORD or last == _DOT) and _ends_in_number(text)

    pos = 0
    for start, end, kind in _pieces(data, root):
        if start < pos:
            continue  # inside a piece already written
        code(pos, start)
        if kind == _DIRECTIVE:
            directive = (data[start:end]).rstrip() + b"\n"
            out_starts.append(size)
            data_starts.append(-1)  # no token there
            out.append(directive)
            size += len(directive)
            last, number_before = ord("\n"), False
        elif kind == _SEMICOLON:
            if last != ord(";"):
                put(b";", -1)  # not in `data`: nothing there to locate
        elif kind == _ATOM:
            put(data[start:end], start)
        pos = max(pos, end)
    code(pos, len(data))

    def located(offset: int, end: bool) -> int:
        inside = offset - 1 if end else offset
        k = bisect_right(out_starts, inside) - 1
        if k < 0 or data_starts[k] < 0:
            return -1
        return data_starts[k] + inside - out_starts[k] + (1 if end else 0)

    return b"".join(out), located
