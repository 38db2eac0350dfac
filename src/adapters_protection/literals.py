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
import re
from collections.abc import Callable, Sequence

import attrs
import tree_sitter

from adapters_protection.cipher import CipherParameters
from adapters_protection.edits import Edit, apply, prelude_offset
from adapters_protection.names import Namer
from adapters_protection.scopes import Added, mover
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

    def finish(self, standin: bool) -> tuple[str, list[str], str]:
        """The declaration (one local: the table of decoded literals, with the decoder at
        0, its array part sized for every key), the expression of each use, and the
        decoder's expression; with `standin`, the declaration holds a stand-in in its
        place."""
        if not self._uses:
            return "", [], ""
        keys = list(range(1, len(self._uses) + 1))
        random.Random(self._seed).shuffle(keys)  # keyed per license and script
        t = self.table
        expressions = []
        for key, (value, interpolated) in zip(keys, self._uses, strict=True):
            # inside a `{...}` of an interpolated string, no brace or backtick in a string
            # (Luau and tree-sitter-luau agree on them; nothing gains from relying on it)
            cipher = quote(self.params.encipher(value, key), b"{}`" if interpolated else b"")
            expressions.append(f"({t}[{key}]or {t}[0]({key},{cipher}))")
        decoder = self.params.decoder(self.longest, len(keys))
        declared = _standin(decoder) if standin else decoder
        return f"local {t}={declared};", expressions, decoder


def _call_argument(node: Node) -> bool:
    """A string passed without parentheses (`f"x"`, `obj:m[[x]]`)."""
    parent = node.parent
    return (parent is not None and parent.type == "arguments"
            and parent.children[0].type != "(")


# A planned replacement: byte range, text before, the table key or the expression, text after.
_Use = tuple[int, int, str, str, bool, str]


_LITERALS = tree_sitter.Query(LANGUAGE, """
[(number) (string)] @literal
(literal_type (string) @typed)
""")


def value_literals(root: Node) -> list[Node]:
    """Number and string nodes used as values, in source order: all of them but the
    strings of singleton types (`type Mode = "fast" | "slow"`), which are not values.
    (The query says which are types: asking each node for its parent walks down from the
    root every time.)"""
    captures = tree_sitter.QueryCursor(_LITERALS).captures(root)
    typed = {n.start_byte for n in captures.get("typed", [])}
    found = captures.get("literal", [])
    return sorted((n for n in found if n.start_byte not in typed), key=lambda n: n.start_byte)


# What the declaration of the decoded literals' table holds in place of the decoder, when
# the caller puts the decoder in later (see `decoder_standin`). Like the decoder, it reads
# the globals `table` and `string`, so a pass that asks which globals a block reads (flatten)
# decides as it would with the decoder there. For the watermark's scanner, which reads each
# carrier's position off the four tokens before it, the code after it reads the same as
# after the decoder: it ends in the same four tokens, and it holds the decoder's pairs of
# quotes `''` (its only quotes), so a scanner that reads code there as a string (after a
# ciphertext with a backtick in it) comes out of it at the same place, as many strings read.
STANDIN_NAME = "LicoreDecoder"


def _standin(decoder: str) -> str:
    quotes = "''," * decoder.count("''")
    return f"{STANDIN_NAME}(table,{quotes}string.byte,string.char)"


def decoder_standin(data: bytes) -> bool:
    """Whether a stand-in can stand for the decoder in a copy of `data`: its name must be
    one the script never spells, so that finding it finds the stand-in."""
    return STANDIN_NAME.encode() not in data


@attrs.frozen
class Literals:
    data: bytes  # the script with its literals protected
    added: range  # bytes of the declarations added at the top (the decoder and the tables)
    decoder: str  # the decoder a stand-in stands for in `data`; "" when it stands for none
    moved: Callable[[int], int]  # where an identifier of the script is in `data`
    # The locals declared in `added` (name, offset in `data`, the globals their value reads);
    # None when the decoder is written out in `data` (it declares variables of its own).
    declared: list[Added] | None


def protect_literals(data: bytes, root: Node, namer: Namer, *, hoist: bool,
                     encrypt: bool, license_secret: bytes, path: str,
                     also: Sequence[Edit] = (), standin: bool = False,
                     nodes: Sequence[Node] | None = None) -> Literals:
    """`data` with its literals hoisted and/or encrypted, plus the edits in `also` (which
    must not touch a literal) applied in the same pass. With `standin` (only if
    `decoder_standin(data)`), the decoder is left out, a stand-in in its place: the caller
    writes it in (every script of a license has the same decoder, but for its table's
    size, so the later passes need not read it again in each)."""
    cipher = _Strings(license_secret, namer, path) if encrypt else None
    plan = _Plan(cipher, _Table(namer) if hoist else None)
    for node in value_literals(root) if nodes is None else nodes:
        plan.literal(data, node)
    prelude, edits, decoder, declared = plan.finish(standin)
    edits += also
    body = apply(data, edits)
    at = prelude_offset(body)
    if prelude:
        body = body[:at] + prelude.encode() + b" " + body[at:]
    size = len(prelude.encode())
    return Literals(body, range(at, at + size), decoder if standin else "",
                    mover(edits, at, size + 1 if prelude else 0),
                    [(name, at + offset, [(read, at + o) for read, o in reads])
                     for name, offset, reads in declared]
                    if standin or not decoder else None)


# The globals a stand-in reads: its words but the fields after `.` (it is ASCII).
_GLOBAL = re.compile(r"(?<![.\w])[A-Za-z_][A-Za-z0-9_]*")


class _Plan:
    """Each literal's replacement, planned in source order, then written as edits once the
    tables are complete (a hoisted value's slot is known only then)."""

    def __init__(self, cipher: _Strings | None, table: _Table | None) -> None:
        self.cipher = cipher
        self.table = table
        self.uses: list[_Use] = []
        self.encrypted: list[tuple[int, int, str, int, str]] = []
        # Where the interpolated strings seen so far end: literals come in source order, so
        # one that starts before it is inside a `{...}` of one.
        self._interpolation_end = 0

    def literal(self, data: bytes, node: Node) -> None:
        source = (node.text or b"").decode()
        if node.type == "number" and self.table is None:
            return
        inside = node.start_byte < self._interpolation_end
        if is_interpolated(node):
            self._interpolation_end = max(self._interpolation_end, node.end_byte)
            self._interpolated(data, node)
            return
        before, after = ("(", ")") if _call_argument(node) else (" ", " ")
        if node.type == "number":
            self.plan(node.start_byte, node.end_byte, before, "n" + source, source, after)
        else:
            # A string inside `{...}` is ciphered like the interpolation's own text (no
            # backtick or brace written as is): the watermark's scanner reads an
            # interpolated string from backtick to backtick, and one backtick too many in
            # it would leave the rest of the copy read as strings, unmarked.
            self.plan_string(node.start_byte, node.end_byte, before, literal_bytes(node),
                             source, after, interpolated=inside)

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

    def finish(self, standin: bool) -> tuple[str, list[Edit], str, list[Added]]:
        """The declarations to add at the top, the edits of every planned literal, the
        decoder (with `standin`, the declarations hold a stand-in in its place), and the
        locals declared (offsets in the declarations; see `Literals.declared`)."""
        cipher, table = self.cipher, self.table
        prelude, expressions, decoder = (cipher.finish(standin) if cipher is not None
                                         else ("", [], ""))
        declared: list[Added] = []
        if prelude and cipher is not None:
            value = len(f"local {cipher.table}=")
            declared.append((cipher.table, len("local "), [
                (m.group(), value + m.start())
                for m in _GLOBAL.finditer(_standin(decoder) if standin else "")]))
        slots: dict[str, int] = {}
        if table is not None and self.uses:
            declaration, slots = table.finish()
            declared.append((table.name, len(prelude) + len("local "), []))
            prelude += declaration
        edits: list[Edit] = [
            (start, end, (before + (f"{table.name}[{slots[what]}]" if indexed and table
                                    else what) + after).encode())
            for start, end, before, what, indexed, after in self.uses]
        edits += [(start, end, (before + expressions[use] + after).encode())
                  for start, end, before, use, after in self.encrypted]
        return prelude, edits, decoder, declared


def put_decoder(data: bytes, decoder: bytes) -> bytes:
    """`data` with `decoder` in place of its one stand-in. Later passes may have
    re-spaced the stand-in or re-formed its field accesses (`string["byte"]`), but never
    put a `)` inside it, so it ends at the first `)` after its name."""
    start = data.find(STANDIN_NAME.encode())
    end = data.find(b")", start) + 1
    if start < 0 or data.find(STANDIN_NAME.encode(), end) >= 0:
        raise ValueError("the copy does not hold exactly one decoder stand-in")
    return data[:start] + decoder + data[end:]
