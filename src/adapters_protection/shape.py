"""Shape marks: one license's code bits written into the *statements* of its sealed
functions, before they are compiled, so that a buyer who decrypts their program and lifts
it back to Luau keeps them, and read back from any Luau text.

The watermark (`watermark`) lives in the forms of comparisons, numbers and field accesses,
which a canonicaliser rewrites in one pass (operand order, mirrored comparisons, number
forms) and which a sealed program does not even keep (it stores a number as its value).
Shape marks live in choices between statements that do exactly the same thing,
which none of those rewrites touches, and which the sealed program keeps node for node:

- `local x = e`, or `local x` then `x = e` (one name, one value that does not mention
  `x`: the value sees the outer `x` in the first form, the new one in the second);
- a call, an assignment, an `if`, a loop or a final `return` as it is, or alone inside one
  to three `do ... end` (two bits);
- `x = x op e`, or `x op= e` (`x` a name: it is read once and written once either way);
- `o:m(a)` or `o.m(o, a)` (`o` a name);
- `if c then a end`, or with an empty `else`.

A site's position is a digest of what the statement computes, in terms a renamer and those
canonical rewrites leave alone: the literal values it holds (a number by value, whatever
its form), how many calls, fields and operators of each kind (a comparison and its mirror
count as one; names are not counted), and the family. Sites that compute alike share a position, and
therefore a bit, so a merge of them never contradicts itself. Reading needs neither the
original nor the path; the scanner below is the definition of a site, used alike to write
and to read, and writing only ever picks the form the license's bit asks for.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence

from adapters_protection.edits import Edit
from adapters_protection.strings import BadEscape, decode_quoted
from adapters_protection.syntax import Node, code_children, text, walk

LOCAL, DO, DEEP, UPDATE, METHOD, ELSE = b"L", b"D", b"E", b"U", b"M", b"S"
_UPDATES = frozenset({"+", "-", "*", "/", "//", "%", "^", ".."})
_SAME_AS = {">": "<", ">=": "<=", "~=": "==", "not": ""}
# Node kinds counted, as one kind where a shape mark's two forms differ (a method call is
# an index either way; names are not counted: the forms add or drop one).
_COUNTED = {"function_call": "call", "dot_index_expression": "index",
            "method_index_expression": "index", "bracket_index_expression": "bracket"}
_SKIPPED = frozenset({"(", ")", ",", ";", "not"})
_DEPTH = 3  # `do ... end` around a statement: 0 to 3, two bits
_MAX_READ = 4 << 20  # bytes of text parsed for shape marks at most
# Names that begin another statement when a statement begins with them (`type x = ...`,
# `export type`, `continue`): never the first word of a statement the writer makes.
_CONTEXTUAL = frozenset({"type", "export", "continue"})

Site = tuple[bytes, int, int]  # (position id, the bit it shows, byte offset)


def _literal(node: Node) -> str | None:
    if node.type == "number":
        raw = text(node).replace("_", "").lower()
        try:
            value = float(int(raw, 16) if raw.startswith("0x") else
                          int(raw[2:], 2) if raw.startswith("0b") else float(raw))
        except ValueError:
            return None
        return f"n{value!r}"
    if node.type == "string" and not text(node).startswith(("`", "[")):
        try:
            return "s" + decode_quoted(text(node)[1:-1]).hex()
        except BadEscape:
            return None
    return None


def _feature(node: Node) -> str | None:
    value = _literal(node)
    if value is not None:
        return value
    if node.type in _COUNTED:
        return _COUNTED[node.type]
    if node.type in ("binary_expression", "unary_expression", "update_statement"):
        operator = next((c.type for c in node.children if not c.is_named), "")
        if node.type == "update_statement":  # x += e counts as the + of x = x + e
            operator = operator[:-1]
        operator = _SAME_AS.get(operator, operator)
        return "op" + operator if operator else None
    return None


_SIGNED = threading.local()  # the signatures of the tree `sites` is reading, by node id


def signature(node: Node | None) -> Counter[str]:
    """What `node` computes, in terms renaming and canonical rewrites leave alone. Within
    `sites`, each node's is worked out once (a statement's holds its nested statements')."""
    if node is None:
        return Counter()
    cache: dict[int, Counter[str]] | None = getattr(_SIGNED, "cache", None)
    if cache is None:
        cache = {}
    done = cache.get(node.id)
    if done is not None:
        return done
    order, stack = [], [node]
    while stack:  # every node under `node` not worked out yet, parents before children
        current = stack.pop()
        order.append(current)
        stack.extend(c for c in current.children if c.id not in cache)
    for current in reversed(order):
        features: Counter[str] = Counter()
        for child in current.children:
            features.update(cache[child.id])
        own = _feature(current)
        if own is not None:
            features[own] += 1
        cache[current.id] = features
    return cache[node.id]


def _position(family: bytes, *parts: Counter[str] | str) -> bytes:
    h = hashlib.blake2b(family, digest_size=12, person=b"licore/shape/v1")
    for part in parts:
        h.update(repr(sorted(part.items()) if isinstance(part, Counter) else part).encode())
        h.update(b"\0")
    return h.digest()


def _single(node: Node, kind: str) -> Node | None:
    """The one named child of `node`'s `kind` list (variable_list or expression_list)."""
    found = next((c for c in node.named_children if c.type == kind), None)
    items = code_children(found) if found is not None else []
    return items[0] if len(items) == 1 else None


def _declared(statement: Node) -> tuple[Node, Node | None, Node | None] | None:
    """(name, value, `=` token) of `local x = e` or `local x` (one name, no attribute)."""
    if statement.type != "variable_declaration" or len(statement.children) != 2:
        return None
    inner = statement.children[1]
    if inner.type == "variable_list":
        alone = [c for c in inner.named_children if c.type == "identifier"]
        return (alone[0], None, None) if len(alone) == 1 and len(
            code_children(inner)) <= 2 else None
    if inner.type != "assignment_statement":
        return None
    name, value = _single(inner, "variable_list"), _single(inner, "expression_list")
    names: Node | None = next((c for c in inner.named_children if c.type == "variable_list"),
                              None)
    if name is None or value is None or name.type != "identifier" or names is None or any(
            c.type == "attribute" for c in names.named_children):
        return None
    equals = next((c for c in inner.children if c.type == "="), None)
    return name, value, equals


def _assigned(statement: Node) -> tuple[Node, Node] | None:
    """(target, value) of a plain one-to-one assignment statement."""
    if statement.type != "assignment_statement" or statement.parent is None or (
            statement.parent.type == "variable_declaration"):
        return None
    target, value = _single(statement, "variable_list"), _single(statement, "expression_list")
    return (target, value) if target is not None and value is not None else None


def _update(statement: Node) -> tuple[Node, str, Node, bool] | None:
    """(target name, operator, e, compound?) of `x = x op e` or `x op= e`."""
    if statement.type == "update_statement":
        target, value = _single(statement, "variable_list"), _single(statement,
                                                                    "expression_list")
        operator = next((c.type for c in statement.children if not c.is_named), "")[:-1]
        if target is not None and value is not None and target.type == "identifier" and (
                operator in _UPDATES) and text(target) not in _CONTEXTUAL:
            return target, operator, value, True
        return None
    plain = _assigned(statement)
    if plain is None:
        return None
    target, value = plain
    if target.type != "identifier" or value.type != "binary_expression":
        return None
    left, right = value.child_by_field_name("left"), value.child_by_field_name("right")
    operator = next((c.type for c in value.children if not c.is_named), "")
    if left is None or right is None or left.type != "identifier" or text(left) != text(
            target) or operator not in _UPDATES or text(target) in _CONTEXTUAL:
        return None
    return target, operator, right, False


def _mentions(node: Node, name: str) -> bool:
    return any(c.type == "identifier" and text(c) == name for c in walk(node))


def _statements(root: Node) -> Iterator[list[Node]]:
    """Every statement list: the chunk's and each block's."""
    for node in walk(root):
        if node.type in ("chunk", "block"):
            yield [c for c in node.named_children
                   if c.type not in ("comment", "empty_statement")]


def _wrapped(statement: Node) -> Node | None:
    """The statement alone inside `do ... end`, if `statement` is such a block."""
    if statement.type != "do_statement":
        return None
    body = statement.child_by_field_name("body")
    inner = [c for c in code_children(body) if c.type != "empty_statement"] if (
        body is not None) else []
    return inner[0] if len(inner) == 1 else None


def _unwrapped(statement: Node) -> tuple[Node, int]:
    """The statement inside every `do ... end` that holds only it, and how many there are
    (at most _DEPTH: a deeper one reads as _DEPTH, and what is inside as its own)."""
    depth = 0
    while depth < _DEPTH:
        inner = _wrapped(statement)
        if inner is None:
            break
        statement, depth = inner, depth + 1
    return statement, depth


# Statements that declare nothing their block sees afterwards: alone in `do ... end` they
# do exactly what they did (a `return` stays last in its block: the `do` block is).
_BLOCKS = frozenset({"function_call", "if_statement", "while_statement", "repeat_statement",
                     "for_statement", "return_statement"})


def _wrappable(statement: Node, last: bool) -> bool:
    if statement.type == "return_statement":
        return last
    return statement.type in _BLOCKS or (
        _assigned(statement) is not None and _update(statement) is None)


_Found = tuple[bytes, int, Node, dict[str, Node]]


def sites(root: Node, within: Callable[[Node], bool] = lambda _: True) -> list[_Found]:
    """Each site: (position, the bit it shows, its statement, its parts), in the
    statement lists for which `within` holds of their first statement."""
    _SIGNED.cache = {}
    try:
        return list(_sites(root, within))
    finally:
        _SIGNED.cache = None


def _sites(root: Node, within: Callable[[Node], bool]) -> Iterator[_Found]:
    for statements in _statements(root):
        if not statements or not within(statements[0]):
            continue
        # The one statement of a `do` block that is itself a site: read there, not here.
        holder = statements[0].parent.parent if statements[0].parent is not None else None
        wrapped = len(statements) == 1 and holder is not None and _wrapped(holder) is not None
        skip = -1
        for i, statement in enumerate(statements):
            yield from _called(statement)
            yield from _else_site(statement)
            if i == skip:
                continue
            following = statements[i + 1] if i + 1 < len(statements) else None
            found = _statement_site(statement, following, i == len(statements) - 1, wrapped)
            if found is not None:
                yield found
                if "second" in found[3]:
                    skip = i + 1
                if "depth" in found[3]:
                    inner, depth = _unwrapped(statement)
                    yield (_position(DEEP, inner.type, signature(inner)), depth >> 1, statement,
                           {"inner": inner, "deep": inner})


def _statement_site(statement: Node, following: Node | None, last: bool,
                    wrapped: bool) -> _Found | None:
    declared = _declared(statement)
    if declared is not None:
        return _local_site(statement, declared, following)
    update = _update(statement)
    if update is not None:
        target, operator, value, compound = update
        return (_position(UPDATE, operator, signature(value)), int(compound), statement,
                {"target": target, "value": value})
    if wrapped:  # read with the `do` around it
        return None
    inner, depth = _unwrapped(statement)
    if (depth and _wrappable(inner, True)) or (not depth and _wrappable(statement, last)):
        return (_position(DO, inner.type, signature(inner)), depth & 1, statement,
                {"inner": inner, "depth": inner})
    return None


def _else_site(statement: Node) -> Iterator[_Found]:
    """`if c then a end`, or `if c then a else end`: an empty `else` does nothing."""
    if statement.type != "if_statement":
        return
    other = next((c for c in statement.named_children if c.type == "else_statement"), None)
    if other is None:
        closing = statement.children[-1]
        if closing.type == "end":
            yield (_position(ELSE, signature(statement)), 0, statement, {"closing": closing})
        return
    body = other.child_by_field_name("body")
    if body is None or not code_children(body):
        yield _position(ELSE, signature(statement)), 1, statement, {"empty_else": other}


def _local_site(statement: Node, declared: tuple[Node, Node | None, Node | None],
                following: Node | None) -> _Found | None:
    name, value, equals = declared
    if text(name) in _CONTEXTUAL:
        return None
    if value is not None and equals is not None and not _mentions(value, text(name)):
        return (_position(LOCAL, signature(value)), 0, statement,
                {"name": name, "value": value, "equals": equals})
    split = _assigned(following) if following is not None else None
    if value is None and following is not None and split is not None and (
            split[0].type == "identifier" and text(split[0]) == text(name)
            and not _mentions(split[1], text(name))):
        return (_position(LOCAL, signature(split[1])), 1, statement,
                {"name": name, "value": split[1], "second": following})
    return None


def _called(statement: Node) -> Iterator[_Found]:
    """Method calls on a name within the statement (not inside nested blocks or
    functions, which are read as their own statements): `o:m(a)` or `o.m(o, a)`, the same
    call when `o` is a name (read once either way)."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if node.type in ("block", "function_definition"):
            continue
        stack.extend(node.children)
        found = _method_site(node) if node.type == "function_call" else None
        if found is not None:
            yield found


def _method_site(call: Node) -> _Found | None:
    callee, args = call.child_by_field_name("name"), call.child_by_field_name("arguments")
    if callee is None or args is None:
        return None
    listed = code_children(args)
    receiver = callee.child_by_field_name("table")
    if receiver is None or receiver.type != "identifier":
        return None
    if callee.type == "method_index_expression":
        method = callee.child_by_field_name("method")
        if method is None or not args.children or args.children[0].type != "(":
            return None
        return (_position(METHOD, text(method), *(signature(a) for a in listed)), 1, call,
                {"receiver": receiver, "method": method, "args": args})
    field = callee.child_by_field_name("field")
    if callee.type != "dot_index_expression" or field is None or not listed or (
            listed[0].type != "identifier" or text(listed[0]) != text(receiver)):
        return None
    return (_position(METHOD, text(field), *(signature(a) for a in listed[1:])), 0, call,
            {"receiver": receiver, "field": field, "args": args, "self": listed[0]})


def read(data: bytes, parse: Callable[[bytes], Node]) -> list[Site]:
    """(position, bit, offset) of every site in a text (the first _MAX_READ bytes)."""
    root = parse(data[:_MAX_READ])
    return [(position, bit, statement.start_byte)
            for position, bit, statement, _ in sites(root)]


def mark_edits(root: Node, data: bytes, inside: Sequence[Node],
               bits_of: Callable[[Sequence[bytes]], list[int]]) -> list[Edit]:
    """The edits that give every site inside the `inside` nodes the form its position's
    bit asks for (none where it already has it)."""
    spans = [(n.start_byte, n.end_byte) for n in inside]

    def within(node: Node) -> bool:
        return any(start <= node.start_byte < end for start, end in spans)

    found = sites(root, within)
    wanted = bits_of([position for position, _, _, _ in found])
    edits: list[Edit] = []
    depths: dict[int, tuple[Node, Node, int]] = {}  # statement -> (it, inside, depth wanted)
    for (_, bit, statement, parts), want in zip(found, wanted, strict=True):
        if "depth" in parts or "deep" in parts:
            _, _, depth = depths.get(statement.id, (statement, parts["inner"], 0))
            depths[statement.id] = (statement, parts["inner"],
                                    depth | (want << (1 if "deep" in parts else 0)))
        elif bit != want:
            edits += _reform(statement, parts, want, data)
    for statement, inner, depth in depths.values():
        if _unwrapped(statement)[1] != depth:
            edits += [(statement.start_byte, inner.start_byte, b"do " * depth),
                      (inner.end_byte, statement.end_byte, b" end" * depth)]
    return edits


def _reform(statement: Node, parts: dict[str, Node], want: int, data: bytes) -> list[Edit]:
    if "equals" in parts:  # local x = e  ->  local x; x = e
        name, equals = parts["name"], parts["equals"]
        names_end = equals.prev_sibling.end_byte if equals.prev_sibling else equals.start_byte
        return [(names_end, equals.end_byte, b"; " + text(name).encode() + b" =")]
    if "second" in parts:  # local x; x = e  ->  local x = e
        second, value = parts["second"], parts["value"]
        return [(statement.end_byte, value.start_byte, b" =")] if second.start_byte >= (
            statement.end_byte) else []
    if "target" in parts:
        target, value = parts["target"], parts["value"]
        word = text(target).encode()
        if want:  # x = x op e  ->  x op= e
            binary = value.parent
            assert binary is not None
            made = next(c.type for c in binary.children if not c.is_named).encode()
            return [(statement.start_byte, value.start_byte, word + b" " + made + b"= ")]
        made = next(c.type for c in statement.children if not c.is_named)[:-1].encode()
        return [(statement.start_byte, value.start_byte, word + b" = " + word + b" " +
                 made + b" ("), (value.end_byte, value.end_byte, b")")]
    if "closing" in parts:  # if c then a end  ->  if c then a else end
        at = parts["closing"].start_byte
        return [(at, at, b"else ")]
    if "empty_else" in parts:  # if c then a else end  ->  if c then a end
        other = parts["empty_else"]
        return [(other.start_byte, other.end_byte, b"")]
    assert "receiver" in parts
    return _method_form(parts, want)


def _method_form(parts: dict[str, Node], want: int) -> list[Edit]:
    receiver, args = parts["receiver"], parts["args"]
    name = text(receiver).encode()
    if want:  # o.m(o, a)  ->  o:m(a)
        field, own = parts["field"], parts["self"]
        following = own.next_sibling
        end = following.end_byte if following is not None and following.type == "," else (
            own.end_byte)
        return [(receiver.end_byte, field.start_byte, b":"),
                (own.start_byte, end, b"")]
    method = parts["method"]  # o:m(a)  ->  o.m(o, a)
    opening = args.children[0]
    rest = code_children(args)
    return [(receiver.end_byte, method.start_byte, b"."),
            (opening.end_byte, opening.end_byte, name + (b", " if rest else b""))]
