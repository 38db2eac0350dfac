"""`strip`: drop comments and collapse whitespace, re-emitting the script token by token.

A space is written only where two tokens would otherwise lex as something else (`a b`,
`1 ..`, `- -`, `[ [`, `> =`, ...). A statement that begins with `(` gets a `;` before it:
on one line, `f() (g)()` would call the result of `f()`, and Luau refuses the same on two
lines as ambiguous. Leading `--!` directives (`--!strict`, `--!native`) are kept, each on its
own line, because Luau reads them only at the top of a script.
"""

from __future__ import annotations

from adapters_protection.syntax import Node, is_interpolated

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DIGITS = frozenset(b"0123456789")
_OPERATORS = frozenset(b"+-*/%^#=<>~:.&|!?@")
_STATEMENT_PARENTS = frozenset({"chunk", "block"})


def _needs_space(prev: bytes, prev_number: bool, cur: bytes, in_interpolation: bool) -> bool:
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
    return in_interpolation and a == b and a in b"{}"


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.prev = b""
        self.prev_number = False

    def token(self, token: bytes, *, number: bool = False, interpolation: bool = False) -> None:
        if not token:
            return
        if self.prev and _needs_space(self.prev, self.prev_number, token, interpolation):
            self.parts.append(b" ")
        self.parts.append(token)
        self.prev, self.prev_number = token, number

    def newline(self) -> None:
        if self.parts:
            self.parts.append(b"\n")
            self.prev, self.prev_number = b"\n", False


def _statement_position(node: Node) -> str | None:
    """'first' or 'later' for a statement in a block, None for any other node. (A first
    statement follows a keyword, a parameter list or a type, never an expression.)"""
    if node.parent is None or node.parent.type not in _STATEMENT_PARENTS:
        return None
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type == "comment":
        sibling = sibling.prev_named_sibling
    return "first" if sibling is None else "later"


def _interpolated_pieces(node: Node, data: bytes) -> list[bytes | Node]:
    """An interpolated string as verbatim text pieces around its embedded expressions."""
    pieces: list[bytes | Node] = []
    pos = node.start_byte
    for child in node.named_children:
        if child.type != "interpolation":
            continue
        brace_open, *inner, brace_close = child.children
        pieces.append(data[pos:brace_open.end_byte])
        pieces += [c for c in inner if c.type != "comment"]
        pos = brace_close.start_byte
    pieces.append(data[pos:node.end_byte])
    return pieces


def strip(data: bytes, root: Node) -> bytes:
    out = _Writer()
    hot = True  # still before the first token of code
    # Stack items: a node to emit, verbatim string text, or a change of interpolation depth.
    stack: list[Node | bytes | int] = [root]
    depth = 0
    while stack:
        item = stack.pop()
        if isinstance(item, int):
            depth += item
            continue
        if isinstance(item, bytes):
            out.token(item, interpolation=depth > 0)
            continue
        node = item
        kind = node.type
        if kind == "comment":
            body = node.text or b""
            if hot and body.startswith(b"--!"):
                out.token(body.rstrip())
                out.newline()
            continue
        if kind == "hash_bang_line":
            out.token((node.text or b"").rstrip())
            out.newline()
            continue
        position = _statement_position(node)
        if position is not None:
            hot = False
            if (position == "later" and data[node.start_byte:node.start_byte + 1] == b"("
                    and out.prev != b";"):
                out.token(b";")
        if kind == "string":
            if is_interpolated(node):
                pieces = _interpolated_pieces(node, data)
                stack += [-1, *reversed(pieces), 1]
            else:
                out.token(node.text or b"", interpolation=depth > 0)
        elif node.child_count == 0:
            out.token(node.text or b"", number=kind == "number", interpolation=depth > 0)
        else:
            stack.extend(reversed(node.children))
    return b"".join(out.parts)
