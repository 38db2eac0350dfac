"""`hoist_constants` and `encrypt_strings`, applied together in one pass over the literals.

Hoisting moves every number and string used as a value into one table declared at the top
of the script, in an order keyed by the license, and replaces each use by an index into it
(`T[17]`). Encryption replaces each string by a call of a generated decoder; with hoisting
on, the table holds the decoder calls, so each string is decoded once, when the script
starts. Literal text inside interpolated strings is treated the same way, as `{...}` parts.
"""

from __future__ import annotations

from collections.abc import Sequence

import tree_sitter

from adapters_protection.edits import Edit, apply, prelude_offset
from adapters_protection.names import Namer
from adapters_protection.strings import (
    StringCipher,
    decode_quoted,
    interpolation_pieces,
    literal_bytes,
    quote,
)
from adapters_protection.syntax import LANGUAGE, Node, is_interpolated


class _Table:
    def __init__(self, namer: Namer) -> None:
        self.name = namer.fresh()
        self._namer = namer
        self._entries: dict[str, str] = {}  # key -> Luau expression, first seen first

    def add(self, key: str, expression: str) -> None:
        self._entries.setdefault(key, expression)

    def finish(self) -> tuple[str, dict[str, int]]:
        """The table declaration, and each key's (1-based) slot in it."""
        order = self._namer.shuffle(list(self._entries))
        body = ",".join(self._entries[key] for key in order)
        return f"local {self.name}={{{body}}};", {key: i + 1 for i, key in enumerate(order)}


def _call_argument(node: Node) -> bool:
    """A string passed without parentheses (`f"x"`, `obj:m[[x]]`)."""
    parent = node.parent
    return (parent is not None and parent.type == "arguments"
            and parent.children[0].type != "(")


# A planned replacement: byte range, text before, the table key or the expression, text after.
_Use = tuple[int, int, str, str, bool, str]


_LITERALS = tree_sitter.Query(LANGUAGE, "[(number) (string)] @literal")


def value_literals(root: Node) -> list[Node]:
    """Number and string nodes used as values, in source order: all of them but the
    strings of singleton types (`type Mode = "fast" | "slow"`), which are not values."""
    found = tree_sitter.QueryCursor(_LITERALS).captures(root).get("literal", [])
    return sorted((n for n in found if n.parent is None or n.parent.type != "literal_type"),
                  key=lambda n: n.start_byte)


def protect_literals(data: bytes, root: Node, namer: Namer, *, hoist: bool,
                     encrypt: bool, license_secret: bytes, path: str,
                     also: Sequence[Edit] = ()) -> bytes:
    """`data` with its literals hoisted and/or encrypted, plus the edits in `also` (which
    must not touch a literal) applied in the same pass."""
    cipher = StringCipher(license_secret, path, namer) if encrypt else None
    table = _Table(namer) if hoist else None
    uses: list[_Use] = []

    def plan(start: int, end: int, before: str, key: str, expression: str,
             after: str) -> None:
        if table is not None:
            table.add(key, expression)
            uses.append((start, end, before, key, True, after))
        else:
            uses.append((start, end, before, expression, False, after))

    def string_expression(value: bytes, original: str) -> str:
        return cipher.encode(value) if cipher is not None else original

    for node in value_literals(root):
        source = (node.text or b"").decode()
        if node.type == "number":
            if table is None:
                continue
            key, expression = "n" + source, source
        elif is_interpolated(node):
            if table is None and cipher is None:
                continue
            for start, end in interpolation_pieces(node):
                if start < end:
                    value = decode_quoted(data[start:end].decode())
                    plan(start, end, "{", "s" + value.hex(),
                         string_expression(value, quote(value)), "}")
            continue
        else:
            value = literal_bytes(node)
            key, expression = "s" + value.hex(), string_expression(value, source)
        wrap = _call_argument(node)
        plan(node.start_byte, node.end_byte, "(" if wrap else " ", key, expression,
             ")" if wrap else " ")

    prelude = cipher.decoder() if cipher is not None and cipher.used else ""
    slots: dict[str, int] = {}
    if table is not None and uses:
        declaration, slots = table.finish()
        prelude += declaration
    edits: list[Edit] = [
        (start, end, (before + (f"{table.name}[{slots[what]}]" if indexed and table
                                else what) + after).encode())
        for start, end, before, what, indexed, after in uses]
    body = apply(data, [*edits, *also])
    if prelude:
        at = prelude_offset(body)
        body = body[:at] + prelude.encode() + b" " + body[at:]
    return body
