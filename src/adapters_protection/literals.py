"""`hoist_constants` and `encrypt_strings`, applied together in one pass over the literals.

Hoisting moves every number and string used as a value into one table declared at the top
of the script, in an order keyed by the license, and replaces each use by an index into it
(`T[17]`). Encryption moves each string to a table of ciphertexts of its own, with or
without hoisting, and replaces each use by a read of a lazy table (`S[4]`) that decodes the
string the first time it is read (see `cipher`): nothing is decoded before it is used. Literal text
inside interpolated strings is treated the same way, as `{...}` parts.
"""

from __future__ import annotations

from collections.abc import Sequence

import tree_sitter

from adapters_protection.cipher import CipherParameters
from adapters_protection.edits import Edit, apply, prelude_offset
from adapters_protection.names import Namer
from adapters_protection.strings import (
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


class _Strings:
    """Encrypted strings: a table of ciphertexts, read through a lazy table that decodes
    each string the first time it is read (`S[4]`); a string's slot is its nonce."""

    def __init__(self, license_secret: bytes, namer: Namer) -> None:
        self.params = CipherParameters.of(license_secret)
        self.table = namer.fresh()
        self._namer = namer
        self._values: dict[bytes, None] = {}
        self.longest = 0

    def add(self, value: bytes) -> None:
        self.longest = max(self.longest, len(value))
        self._values.setdefault(value)

    def finish(self) -> tuple[str, dict[bytes, int]]:
        """The declaration, and each string's slot."""
        if not self._values:
            return "", {}
        keyed = {v.hex(): v for v in self._values}
        order = [keyed[k] for k in self._namer.shuffle(list(keyed))]
        slots = {v: i + 1 for i, v in enumerate(order)}
        texts = ",".join(quote(self.params.encipher(v, slots[v])) for v in order)
        # The decoder and the ciphertexts are arguments, not locals: the script's top level
        # gets one local for all its strings. A table read is what a use costs once the
        # string is decoded (the array part is sized up front, so that read is the fast one).
        code = (f"local {self.table}=(function(d,c)return setmetatable(table.create(#c),"
                f"{{__index=function(t,k)local v=d(c[k],k)t[k]=v return v end}})end)("
                f"{self.params.decoder(self.longest)},{{{texts}}});")
        return code, slots


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
                     also: Sequence[Edit] = ()) -> tuple[bytes, range]:
    """`data` with its literals hoisted and/or encrypted, plus the edits in `also` (which
    must not touch a literal) applied in the same pass; and the byte range of the
    declarations added at the top (the decoder and the tables)."""
    plan = _Plan(_Strings(license_secret, namer) if encrypt else None,
                 _Table(namer) if hoist else None)
    for node in value_literals(root):
        plan.literal(data, node)
    prelude, edits = plan.finish()
    body = apply(data, [*edits, *also])
    at = prelude_offset(body)
    if prelude:
        body = body[:at] + prelude.encode() + b" " + body[at:]
    return body, range(at, at + len(prelude.encode()))


class _Plan:
    """Each literal's replacement, planned in source order, then written as edits once the
    tables are complete (a hoisted value's slot is known only then)."""

    def __init__(self, cipher: _Strings | None, table: _Table | None) -> None:
        self.cipher = cipher
        self.table = table
        self.uses: list[_Use] = []
        self.hoisted_strings: list[tuple[int, int, str, bytes, str]] = []

    def literal(self, data: bytes, node: Node) -> None:
        source = (node.text or b"").decode()
        if node.type == "number" and self.table is None:
            return
        if is_interpolated(node):
            self._interpolated(data, node)
            return
        before, after = ("(", ")") if _call_argument(node) else (" ", " ")
        if node.type == "number":
            self.plan(node.start_byte, node.end_byte, before, "n" + source, source, after)
        else:
            self.plan_string(node.start_byte, node.end_byte, before, literal_bytes(node),
                             source, after)

    def _interpolated(self, data: bytes, node: Node) -> None:
        if self.table is None and self.cipher is None:
            return
        for start, end in interpolation_pieces(node):
            if start < end:
                value = decode_quoted(data[start:end].decode())
                self.plan_string(start, end, "{", value, quote(value), "}")

    def plan(self, start: int, end: int, before: str, key: str, expression: str,
             after: str) -> None:
        if self.table is not None:
            self.table.add(key, expression)
            self.uses.append((start, end, before, key, True, after))
        else:
            self.uses.append((start, end, before, expression, False, after))

    def plan_string(self, start: int, end: int, before: str, value: bytes, original: str,
                    after: str) -> None:
        if self.cipher is not None:
            self.cipher.add(value)
            self.hoisted_strings.append((start, end, before, value, after))
        else:
            self.plan(start, end, before, "s" + value.hex(), original, after)

    def finish(self) -> tuple[str, list[Edit]]:
        """The declarations to add at the top, and the edits of every planned literal."""
        cipher, table = self.cipher, self.table
        prelude, string_slots = cipher.finish() if cipher is not None else ("", {})
        slots: dict[str, int] = {}
        if table is not None and self.uses:
            declaration, slots = table.finish()
            prelude += declaration
        edits: list[Edit] = [
            (start, end, (before + (f"{table.name}[{slots[what]}]" if indexed and table
                                    else what) + after).encode())
            for start, end, before, what, indexed, after in self.uses]
        if cipher is not None:
            edits += [(start, end,
                       f"{before}{cipher.table}[{string_slots[value]}]{after}".encode())
                      for start, end, before, value, after in self.hoisted_strings]
        return prelude, edits
