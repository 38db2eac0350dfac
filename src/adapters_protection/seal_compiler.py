"""Sealed functions: the compiler from a tree-sitter-luau function to the program the
SDK's closure-compiling VM runs (`sdk/luau/src/SealedVM.luau`).

A program is a stream of unsigned integers (varints) and byte strings, read front to back by
the VM, which turns it once into nested Luau closures; sealed functions are then real Luau
functions (so coroutines, metatables, pcall and error values behave natively). Variables
are resolved here: a local lives in a slot of its activation's frame, boxed (a one-element
table) when an inner function captures it, so a closure made in a loop gets the fresh
local of its own iteration. What a sealed function uses from outside (the script's locals,
globals) reaches it as captures the stub in the copy hands over.

Node tags are written through a per-buyer permutation and strings under a per-buyer key
(`Encoding`): two buyers' programs of one function share no tag numbering and no string
bytes. See docs/protection.md, "Sealed functions".
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Sequence

import attrs

from adapters_protection.analysis import Analysis, Binding
from adapters_protection.analysis import Function as Scope
from adapters_protection.strings import decode_quoted, interpolation_pieces, literal_bytes
from adapters_protection.syntax import Node, code_children, is_interpolated, is_local, line, text

FORMAT = 1  # the program format; the SDK refuses others with a clear error

# Canonical node names; a buyer's program numbers them through a permutation.
TAGS: tuple[str, ...] = (
    # expressions
    "nil", "true", "false", "num", "str", "vararg1", "varargm", "local", "boxed", "upval",
    "index", "indexk", "call1", "callm", "method1", "methodm", "func", "add", "sub", "mul",
    "div", "idiv", "mod", "pow", "concat", "eq", "ne", "lt", "le", "gt", "ge", "and", "or",
    "unm", "not", "len", "table", "ifx", "interp", "errcall1", "errcallm",
    # statements
    "slocal", "sassign", "scall", "sdo", "swhile", "srepeat", "sif", "sfornum", "sforin",
    "sreturn", "sbreak", "scontinue", "slocalfunc", "scompound",
    # assignment targets
    "tlocal", "tboxed", "tupval", "tindex",
)
_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "idiv", "%": "mod",
           "^": "pow", "..": "concat", "==": "eq", "~=": "ne", "<": "lt", "<=": "le",
           ">": "gt", ">=": "ge", "and": "and", "or": "or"}
_UNARY = {"-": "unm", "not": "not", "#": "len"}
_COMPOUND = {"+=": "add", "-=": "sub", "*=": "mul", "/=": "div", "//=": "idiv", "%=": "mod",
             "^=": "pow", "..=": "concat"}
_POSITIONED = frozenset({"error", "assert", "pcall", "xpcall"})
FIRST_SLOT = 4  # frame slots 1-3 hold the upvalues, the varargs and a return value
MAX_FOR_NAMES = 4


class SealError(ValueError):
    """A function the compiler cannot seal; `line` is where."""

    def __init__(self, node: Node, reason: str) -> None:
        super().__init__(f"line {line(node)}: {reason}")
        self.line = line(node)
        self.reason = reason


def _field(node: Node, name: str) -> str:
    child = node.child_by_field_name(name)
    if child is None:
        raise SealError(node, f"{node.type} without its {name}")
    return text(child)


@attrs.frozen
class Encoding:
    """One buyer's encoding: tag numbers (a permutation of 1..len(TAGS)) and string key."""

    tags: tuple[int, ...]
    string_key: bytes

    @classmethod
    def from_seed(cls, seed: bytes) -> Encoding:
        rng = random.Random(hashlib.sha256(b"tags|" + seed).digest())
        numbers = list(range(1, len(TAGS) + 1))
        rng.shuffle(numbers)
        return cls(tuple(numbers), hashlib.sha256(b"strings|" + seed).digest())


class Writer:
    def __init__(self, encoding: Encoding) -> None:
        self.out = bytearray()
        self.encoding = encoding
        self._tag = {name: encoding.tags[i] for i, name in enumerate(TAGS)}

    def int(self, value: int) -> None:
        if value < 0:
            raise ValueError("negative")
        while value >= 0x80:
            self.out.append(0x80 | (value & 0x7F))
            value >>= 7
        self.out.append(value)

    def tag(self, name: str) -> None:
        self.int(self._tag[name])

    def bytes(self, value: bytes) -> None:
        """A string under the buyer's key: byte i XOR key[(i + n) % 32], n its length."""
        key = self.encoding.string_key
        self.int(len(value))
        n = len(value)
        self.out += bytes(b ^ key[(i + n) % 32] for i, b in enumerate(value))


def number_text(node: Node) -> bytes:
    """A Luau number literal as text `tonumber` reads the same way."""
    raw = text(node).replace("_", "").lower()
    if raw.startswith("0x"):
        value = float(int(raw, 16))
    elif raw.startswith("0b"):
        value = float(int(raw[2:], 2))
    else:
        value = float(raw)
    if math.isinf(value):
        return b"1e999"
    return repr(value).encode()


@attrs.define(eq=False)
class _Fn:
    """A function being compiled: its frame slots and upvalues."""

    scope: Scope | None
    parent: _Fn | None
    slots: dict[int, int] = attrs.Factory(dict)  # id(binding) -> slot
    boxed: set[int] = attrs.Factory(set)  # slots holding a box
    upvalues: dict[int, int] = attrs.Factory(dict)  # id(binding) -> upvalue index (1-based)
    upvalue_sources: list[tuple[bool, int]] = attrs.Factory(list)  # (from parent slot?, n)
    next_slot: int = FIRST_SLOT
    vararg: bool = False

    def new_slot(self) -> int:
        self.next_slot += 1
        return self.next_slot - 1


Capture = tuple[str, str]  # ("local"|"global", name): what the stub hands over, in order


class Compiler:
    """Compiles sealed functions of one script (one analysis) into one program."""

    def __init__(self, analysis: Analysis, encoding: Encoding) -> None:
        self.analysis = analysis
        self.w = Writer(encoding)
        self.fn: _Fn | None = None
        self.captured = {b for f in analysis.functions for b in f.upvalues}
        self.scope_of = {f.node.id: f for f in analysis.functions if f.node is not None}
        self.captures: list[Capture] = []
        self._global_keys: dict[str, int] = {}
        self._capture_index: dict[Capture, int] = {}
        self._outer: _Fn | None = None

    # entry -----------------------------------------------------------------------------

    def entry(self, node: Node, *, method: bool) -> list[Capture]:
        """Compile one sealed function (declaration or definition node); returns what it
        captures, in the order its stub must hand them over."""
        self.captures, self._capture_index = [], {}
        self._outer = _Fn(None, None)  # stands for the script around: its "slots" are captures
        self.fn = self._outer
        self.function(node, method=method)
        self.fn = None
        return self.captures

    def _finish_proto(self, mark: int, upvalues: list[tuple[bool, int]], slots: int) -> None:
        """Prefix a proto's body with its upvalue table and frame size (known only now)."""
        head = Writer(self.w.encoding)
        head.int(slots)
        head.int(len(upvalues))
        for from_slot, n in upvalues:
            head.int(n * 2 + (1 if from_slot else 0))
        self.w.out[mark:mark] = head.out

    # functions -------------------------------------------------------------------------

    def function(self, node: Node, *, method: bool) -> None:
        scope = self.scope_of.get(node.id)
        fn = _Fn(scope, self.fn)
        outer, self.fn = self.fn, fn
        params = node.child_by_field_name("parameters")
        names: list[Binding | None] = []
        if method:
            names.append(next((b for b in self.analysis.bindings
                               if b.function is scope and b.declaration is None), None))
        for param in code_children(params) if params is not None else []:
            parts = code_children(param)
            if parts and parts[0].type == "vararg_expression":
                fn.vararg = True
            elif parts and parts[0].type == "identifier":
                names.append(self.analysis.binding_of(parts[0]))
        boxed = []
        for binding in names:
            slot = fn.new_slot()
            if binding is not None:
                fn.slots[id(binding)] = slot
                if id(binding) in self.captured:
                    fn.boxed.add(slot)
                    boxed.append(slot)
        self.w.int(len(names))
        self.w.int(1 if fn.vararg else 0)
        self.w.int(len(boxed))
        for slot in boxed:
            self.w.int(slot)
        mark = len(self.w.out)
        self.block(node.child_by_field_name("body"))
        self._finish_proto(mark, fn.upvalue_sources, fn.next_slot)
        self.fn = outer

    # variables ---------------------------------------------------------------------------

    def declare(self, identifier: Node) -> tuple[int, bool]:
        assert self.fn is not None
        binding = self.analysis.binding_of(identifier)
        slot = self.fn.new_slot()
        boxed = binding is not None and id(binding) in self.captured
        if binding is not None:
            self.fn.slots[id(binding)] = slot
            if boxed:
                self.fn.boxed.add(slot)
        return slot, boxed

    def _capture(self, capture: Capture) -> int:
        index = self._capture_index.get(capture)
        if index is None:
            self.captures.append(capture)
            index = self._capture_index[capture] = len(self.captures)
        return index

    def _upvalue(self, fn: _Fn, key: int, capture: Capture) -> int:
        """The index of the upvalue of `fn` that reaches binding `key` (or the capture)."""
        found = fn.upvalues.get(key)
        if found is not None:
            return found
        parent = fn.parent
        assert parent is not None
        if parent is self._outer:
            source = (False, self._capture(capture))
        elif key in parent.slots:
            source = (True, parent.slots[key])
        else:
            source = (False, self._upvalue(parent, key, capture))
        fn.upvalue_sources.append(source)
        fn.upvalues[key] = len(fn.upvalue_sources)
        return fn.upvalues[key]

    def variable(self, identifier: Node) -> tuple[str, int]:
        """("local"|"boxed"|"upval", n) for an identifier in value position."""
        assert self.fn is not None
        binding = self.analysis.binding_of(identifier)
        if binding is None:
            capture: Capture = ("global", text(identifier))
            # globals are keyed by negative numbers, never a binding's id (always positive)
            key = self._global_keys.setdefault(capture[1], -1 - len(self._global_keys))
        else:
            capture, key = ("local", text(identifier)), id(binding)
        slot = self.fn.slots.get(key)
        if slot is not None:
            return ("boxed" if slot in self.fn.boxed else "local"), slot
        return "upval", self._upvalue(self.fn, key, capture)

    # blocks and statements ---------------------------------------------------------------

    def block(self, node: Node | None) -> None:
        statements = [s for s in (code_children(node) if node is not None else [])
                      if s.type not in ("empty_statement", "type_definition")]
        self.w.int(len(statements))
        for statement in statements:
            self.w.int(line(statement))  # where Luau's own errors in it are reported
            handler = _STATEMENTS.get(statement.type)
            if handler is None:
                raise SealError(statement, f"{statement.type} cannot be sealed")
            handler(self, statement)

    def local_declaration(self, node: Node) -> None:
        assign = next((c for c in node.named_children if c.type == "assignment_statement"), None)
        holder = assign if assign is not None else node
        names = next(c for c in holder.named_children if c.type == "variable_list")
        values = next((c for c in holder.named_children if c.type == "expression_list"), None)
        identifiers = [c for i, c in enumerate(names.children)
                       if names.field_name_for_child(i) == "name" and c.type == "identifier"]
        self.w.tag("slocal")
        self.expression_list(values)  # values first: they do not see the new names
        self.w.int(len(identifiers))
        for identifier in identifiers:
            slot, boxed = self.declare(identifier)
            self.w.int(slot * 2 + (1 if boxed else 0))

    def expression_list(self, node: Node | None, *, multi: bool = True) -> None:
        items = [] if node is None else (
            code_children(node) if node.type == "expression_list" else [node])
        self.w.int(len(items))
        for i, item in enumerate(items):
            self.expression(item, multi=multi and i == len(items) - 1)

    def function_declaration(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        assert name is not None
        if is_local(node):
            self.w.tag("slocalfunc")
            slot, boxed = self.declare(name)  # declared first: the body sees itself
            self.w.int(slot * 2 + (1 if boxed else 0))
            self.function(node, method=False)
            return
        self.w.tag("sassign")
        self.w.int(1)
        if name.type == "method_index_expression":
            self.w.tag("tindex")
            self.expression(name.child_by_field_name("table"))
            self._string_constant(_field(name, "method").encode())
        else:
            self.target(name)
        self.w.int(1)
        self.w.tag("func")
        self.function(node, method=name.type == "method_index_expression")

    def target(self, node: Node) -> None:
        if node.type == "identifier":
            kind, n = self.variable(node)
            self.w.tag({"local": "tlocal", "boxed": "tboxed", "upval": "tupval"}[kind])
            self.w.int(n)
        elif node.type == "dot_index_expression":
            self.w.tag("tindex")
            self.expression(node.child_by_field_name("table"))
            self._string_constant(_field(node, "field").encode())
        elif node.type == "bracket_index_expression":
            self.w.tag("tindex")
            self.expression(node.child_by_field_name("table"))
            self.expression(node.child_by_field_name("field"))
        else:
            raise SealError(node, f"cannot assign to {node.type}")

    def assignment(self, node: Node) -> None:
        targets = next(c for c in code_children(node) if c.type == "variable_list")
        values = next((c for c in code_children(node) if c.type == "expression_list"), None)
        names = [c for c in code_children(targets)
                 if c.type in ("identifier", "dot_index_expression", "bracket_index_expression")]
        self.w.tag("sassign")
        self.w.int(len(names))
        for target in names:
            self.target(target)
        self.expression_list(values)

    def update(self, node: Node) -> None:
        targets = next(c for c in code_children(node) if c.type == "variable_list")
        values = next(c for c in code_children(node) if c.type == "expression_list")
        operator = next(c for c in node.children if c.type in _COMPOUND)
        self.w.tag("scompound")
        self.w.tag(_COMPOUND[operator.type])
        self.target(code_children(targets)[0])
        self.expression(code_children(values)[0])

    def call_statement(self, node: Node) -> None:
        self.w.tag("scall")
        self.expression(node, multi=True)

    def do_statement(self, node: Node) -> None:
        self.w.tag("sdo")
        self.block(node.child_by_field_name("body"))

    def while_statement(self, node: Node) -> None:
        self.w.tag("swhile")
        self.expression(node.child_by_field_name("condition"))
        self.block(node.child_by_field_name("body"))

    def repeat_statement(self, node: Node) -> None:
        self.w.tag("srepeat")
        self.block(node.child_by_field_name("body"))
        self.expression(node.child_by_field_name("condition"))

    def if_statement(self, node: Node) -> None:
        branches = [node] + [c for c in code_children(node) if c.type == "elseif_statement"]
        other = next((c for c in code_children(node) if c.type == "else_statement"), None)
        self.w.tag("sif")
        self.w.int(len(branches))
        for branch in branches:
            self.expression(branch.child_by_field_name("condition"))
            self.block(branch.child_by_field_name("consequence"))
        self.w.int(1 if other is not None else 0)
        if other is not None:
            self.block(other.child_by_field_name("body"))

    def for_statement(self, node: Node) -> None:
        clause = node.child_by_field_name("clause")
        body = node.child_by_field_name("body")
        assert clause is not None
        if clause.type == "for_numeric_clause":
            self.w.tag("sfornum")
            bounds = [clause.child_by_field_name(f) for f in ("start", "end", "step")]
            self.w.int(3 if bounds[2] is not None else 2)
            for bound in bounds:
                if bound is not None:
                    self.expression(bound)
            name = clause.child_by_field_name("name")
            assert name is not None
            slot, boxed = self.declare(name)
            self.w.int(slot * 2 + (1 if boxed else 0))
            self.block(body)
            return
        names_node = next(c for c in clause.named_children if c.type == "variable_list")
        values = next(c for c in clause.named_children if c.type == "expression_list")
        names = [c for i, c in enumerate(names_node.children)
                 if names_node.field_name_for_child(i) == "name" and c.type == "identifier"]
        if len(names) > MAX_FOR_NAMES:
            raise SealError(node, f"a sealed generic for takes at most {MAX_FOR_NAMES} names")
        self.w.tag("sforin")
        self.expression_list(values)
        self.w.int(len(names))
        for identifier in names:
            slot, boxed = self.declare(identifier)
            self.w.int(slot * 2 + (1 if boxed else 0))
        self.block(body)

    def return_statement(self, node: Node) -> None:
        self.w.tag("sreturn")
        values = next(iter(code_children(node)), None)
        items = [] if values is None else (
            code_children(values) if values.type == "expression_list" else [values])
        spreads = bool(items) and items[-1].type in ("function_call", "vararg_expression")
        self.w.int(1 if spreads else 0)
        self.expression_list(values)

    def break_statement(self, node: Node) -> None:
        self.w.tag("sbreak")

    def continue_statement(self, node: Node) -> None:
        self.w.tag("scontinue")

    # expressions -------------------------------------------------------------------------

    def expression(self, node: Node | None, *, multi: bool = False) -> None:
        if node is None:
            self.w.tag("nil")
            return
        kind = node.type
        if kind == "function_call":
            self.call(node, multi=multi)
        elif kind == "vararg_expression":
            self.w.tag("varargm" if multi else "vararg1")
        else:
            handler = _EXPRESSIONS.get(kind)
            if handler is None:
                raise SealError(node, f"{kind} cannot be sealed")
            handler(self, node)

    def _string_constant(self, value: bytes) -> None:
        self.w.tag("str")
        self.w.bytes(value)

    def identifier(self, node: Node) -> None:
        kind, n = self.variable(node)
        self.w.tag(kind)
        self.w.int(n)

    def number(self, node: Node) -> None:
        self.w.tag("num")
        self.w.bytes(number_text(node))

    def string(self, node: Node) -> None:
        if not is_interpolated(node):
            self._string_constant(literal_bytes(node))
            return
        data = node.text or b""
        pieces = [decode_quoted(data[a - node.start_byte:b - node.start_byte].decode())
                  for a, b in interpolation_pieces(node)]
        values = [code_children(c)[0] for c in node.named_children if c.type == "interpolation"]
        self.w.tag("interp")
        self.w.int(len(values))
        self.w.bytes(pieces[0])
        for value, piece in zip(values, pieces[1:], strict=True):
            self.expression(value)
            self.w.bytes(piece)

    def constant(self, node: Node) -> None:
        self.w.tag(node.type)

    def function_definition(self, node: Node) -> None:
        self.w.tag("func")
        self.function(node, method=False)

    def call(self, node: Node, *, multi: bool) -> None:
        callee = node.child_by_field_name("name")
        args_node = node.child_by_field_name("arguments")
        assert callee is not None and args_node is not None
        args = code_children(args_node)
        if callee.type == "method_index_expression":
            self.w.tag("methodm" if multi else "method1")
            self.expression(callee.child_by_field_name("table"))
            self.w.bytes(_field(callee, "method").encode())
        elif (callee.type == "identifier" and text(callee) in _POSITIONED
              and self.analysis.binding_of(callee) is None):
            # Errors keep their position: the VM gives `error` and `assert` the original line
            # when the callee is the real function and would have added a position, and
            # makes `pcall`/`xpcall` report Luau's own errors at the original line.
            self.w.tag("errcallm" if multi else "errcall1")
            self.w.int(line(node))
            self.expression(callee)
        else:
            self.w.tag("callm" if multi else "call1")
            self.expression(callee)
        self.w.int(len(args))
        for i, arg in enumerate(args):
            self.expression(arg, multi=i == len(args) - 1)

    def dot_index(self, node: Node) -> None:
        self.w.tag("indexk")
        self.expression(node.child_by_field_name("table"))
        self.w.bytes(_field(node, "field").encode())

    def bracket_index(self, node: Node) -> None:
        self.w.tag("index")
        self.expression(node.child_by_field_name("table"))
        self.expression(node.child_by_field_name("field"))

    def parenthesized(self, node: Node) -> None:
        self.expression(code_children(node)[0])

    def cast(self, node: Node) -> None:
        self.expression(code_children(node)[0])

    def binary(self, node: Node) -> None:
        operator = node.child_by_field_name("operator") or next(
            c for c in node.children if not c.is_named)
        self.w.tag(_BINARY[text(operator)])
        self.expression(node.child_by_field_name("left"))
        self.expression(node.child_by_field_name("right"))

    def unary(self, node: Node) -> None:
        operator = next(c for c in node.children if not c.is_named)
        self.w.tag(_UNARY[text(operator)])
        self.expression(node.child_by_field_name("operand"))

    def table_constructor(self, node: Node) -> None:
        fields = [f for f in code_children(node) if f.type == "field"]
        self.w.tag("table")
        self.w.int(len(fields))
        for i, field in enumerate(fields):
            name = field.child_by_field_name("name")
            value = field.child_by_field_name("value")
            if name is None:  # positional
                self.w.int(0)
                self.expression(value, multi=i == len(fields) - 1)
            elif field.children[0].type == "[":
                self.w.int(1)
                self.expression(name)
                self.expression(value)
            else:
                self.w.int(1)
                self._string_constant(text(name).encode())
                self.expression(value)

    def if_expression(self, node: Node) -> None:
        clauses = [node] + [c for c in code_children(node) if c.type == "elseif_clause"]
        other = next(c for c in code_children(node) if c.type == "else_clause")
        self.w.tag("ifx")
        self.w.int(len(clauses))
        for clause in clauses:
            self.expression(clause.child_by_field_name("condition"))
            self.expression(clause.child_by_field_name("consequence"))
        self.expression(other.child_by_field_name("consequence"))


_Handler = Callable[[Compiler, Node], None]

_STATEMENTS: dict[str, _Handler] = {
    "variable_declaration": Compiler.local_declaration,
    "function_declaration": Compiler.function_declaration,
    "assignment_statement": Compiler.assignment,
    "update_statement": Compiler.update,
    "function_call": Compiler.call_statement,
    "do_statement": Compiler.do_statement,
    "while_statement": Compiler.while_statement,
    "repeat_statement": Compiler.repeat_statement,
    "if_statement": Compiler.if_statement,
    "for_statement": Compiler.for_statement,
    "return_statement": Compiler.return_statement,
    "break_statement": Compiler.break_statement,
    "continue_statement": Compiler.continue_statement,
}

_EXPRESSIONS: dict[str, _Handler] = {
    "identifier": Compiler.identifier,
    "number": Compiler.number,
    "string": Compiler.string,
    "nil": Compiler.constant,
    "true": Compiler.constant,
    "false": Compiler.constant,
    "function_definition": Compiler.function_definition,
    "dot_index_expression": Compiler.dot_index,
    "bracket_index_expression": Compiler.bracket_index,
    "parenthesized_expression": Compiler.parenthesized,
    "binary_expression": Compiler.binary,
    "unary_expression": Compiler.unary,
    "table_constructor": Compiler.table_constructor,
    "if_expression": Compiler.if_expression,
    "cast_expression": Compiler.cast,
}


def compile_functions(analysis: Analysis, encoding: Encoding,
                      entries: Sequence[tuple[Node, bool]]) -> tuple[bytes, list[list[Capture]]]:
    """One program holding every sealed function of a script, in order: the header (format,
    number of entries), then each entry's proto."""
    compiler = Compiler(analysis, encoding)
    compiler.w.int(FORMAT)
    compiler.w.int(len(TAGS))
    for number in encoding.tags:
        compiler.w.int(number)
    compiler.w.int(len(encoding.string_key))
    compiler.w.out += encoding.string_key
    compiler.w.int(len(entries))
    captures = []
    for node, method in entries:
        captures.append(compiler.entry(node, method=method))
    return bytes(compiler.w.out), captures
