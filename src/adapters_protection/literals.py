"""`hoist_constants` and `encrypt_strings`, applied together in one pass over the literals.

Hoisting moves every number and string used as a value into one table declared at the top
of the script, in an order keyed by the license, and replaces each use by an index into it
(`T[17]`). Encryption, with or without hoisting, enciphers each use of a string under a
key of its own, written in place: `(L[k]or L[0](k,"..."))` decodes the string the first
time that use runs and reads it from `L` after (see `cipher`). Nothing is decoded before it
is used, and no table, metatable or function holds a literal whose use has not run. Literal text
inside interpolated strings is treated the same way, as `{...}` parts.
"""

from __future__ import annotations

import hashlib
import hmac
import random
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
    """Encrypted strings: each use of a literal becomes `(L[k]or L[0](k,"..."))`, with a
    key `k` of its own (a number from 1 to the number of uses, in an order drawn per
    license and script) and the literal enciphered under the keystream that key starts. `L`
    starts out holding only the decoder (at 0); a use decodes its literal the first time it
    runs and leaves it at its key, so later runs are one read of the table's array part.
    There is no table of ciphertexts and no metatable: what a run can give away is what it
    reached."""

    def __init__(self, license_secret: bytes, namer: Namer, path: str) -> None:
        self.params = CipherParameters.of(license_secret)
        self.table = namer.fresh()
        self._seed = hmac.new(license_secret, b"licore/literal-keys\0" + path.encode(),
                              hashlib.sha256).digest()
        self._uses: list[tuple[bytes, bool]] = []
        self.longest = 0

    def use(self, value: bytes, interpolated: bool) -> int:
        """Plan one place `value` is used; its expression comes from `finish`."""
        self.longest = max(self.longest, len(value))
        self._uses.append((value, interpolated))
        return len(self._uses) - 1

    def finish(self) -> tuple[str, list[str]]:
        """The declaration (one local: the table of decoded literals, with the decoder at
        0, its array part sized for every key), and the expression of each use."""
        if not self._uses:
            return "", []
        keys = list(range(1, len(self._uses) + 1))
        random.Random(self._seed).shuffle(keys)  # keyed per license and script
        t = self.table
        expressions = []
        for key, (value, interpolated) in zip(keys, self._uses, strict=True):
            # inside a `{...}` of an interpolated string, no brace or backtick in a string
            # (Luau and tree-sitter-luau agree on them; nothing gains from relying on it)
            cipher = quote(self.params.encipher(value, key), b"{}`" if interpolated else b"")
            expressions.append(f"({t}[{key}]or {t}[0]({key},{cipher}))")
        return (f"local {t}={self.params.decoder(self.longest, len(keys))};", expressions)


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
    plan = _Plan(_Strings(license_secret, namer, path) if encrypt else None,
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
        self.encrypted: list[tuple[int, int, str, int, str]] = []

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
                self.plan_string(start, end, "{", value, quote(value), "}",
                                 interpolated=True)

    def plan(self, start: int, end: int, before: str, key: str, expression: str,
             after: str) -> None:
        if self.table is not None:
            self.table.add(key, expression)
            self.uses.append((start, end, before, key, True, after))
        else:
            self.uses.append((start, end, before, expression, False, after))

    def plan_string(self, start: int, end: int, before: str, value: bytes, original: str,
                    after: str, interpolated: bool = False) -> None:
        if self.cipher is not None:
            self.encrypted.append(
                (start, end, before, self.cipher.use(value, interpolated), after))
        else:
            self.plan(start, end, before, "s" + value.hex(), original, after)

    def finish(self) -> tuple[str, list[Edit]]:
        """The declarations to add at the top, and the edits of every planned literal."""
        cipher, table = self.cipher, self.table
        prelude, expressions = cipher.finish() if cipher is not None else ("", [])
        slots: dict[str, int] = {}
        if table is not None and self.uses:
            declaration, slots = table.finish()
            prelude += declaration
        edits: list[Edit] = [
            (start, end, (before + (f"{table.name}[{slots[what]}]" if indexed and table
                                    else what) + after).encode())
            for start, end, before, what, indexed, after in self.uses]
        edits += [(start, end, (before + expressions[use] + after).encode())
                  for start, end, before, use, after in self.encrypted]
        return prelude, edits
