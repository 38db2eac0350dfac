"""Scope analysis over a tree-sitter-luau tree: which identifier is which variable.

Every identifier in an expression or binding position is resolved the way the Luau compiler
resolves it: to a local (declared by `local`, `local function`, a parameter, a loop variable
or a method's implicit `self`) or, when no local is visible, to a global. Field names, method
names, table keys written as names, type names and attributes are not variables and are never
resolved.

The walk uses an explicit task stack rather than recursion: generated scripts nest deeply.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial

import attrs

from adapters_protection.syntax import Node, code_children, is_local, line, text, walk

ENV_FUNCTIONS = frozenset({"getfenv", "setfenv"})
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@attrs.define(eq=False)
class Function:
    """A function body (the chunk itself has node None)."""

    node: Node | None
    parent: Function | None
    active: int = 0
    max_active: int = 0
    upvalues: set[int] = attrs.Factory(set)  # ids of captured bindings

    @property
    def line(self) -> int:
        return 1 if self.node is None else line(self.node)


@attrs.define(eq=False)
class Binding:
    """One local variable; `declaration` is None for a method's implicit `self`."""

    name: str
    function: Function
    declaration: Node | None
    references: list[Node] = attrs.Factory(list)  # identifier nodes, declaration included
    const: bool = False


@attrs.define(eq=False)
class Analysis:
    bindings: list[Binding] = attrs.Factory(list)
    resolved: dict[int, Binding] = attrs.Factory(dict)  # identifier start byte -> binding
    globals: dict[str, list[Node]] = attrs.Factory(dict)
    names: set[str] = attrs.Factory(set)  # every word spelled anywhere
    functions: list[Function] = attrs.Factory(list)
    unsupported: list[Node] = attrs.Factory(list)

    @property
    def env_users(self) -> list[Node]:
        return [n for name in sorted(ENV_FUNCTIONS) for n in self.globals.get(name, [])]

    def binding_of(self, identifier: Node) -> Binding | None:
        return self.resolved.get(identifier.start_byte)


Task = Callable[[], None]


class _Analyzer:
    def __init__(self) -> None:
        self.result = Analysis()
        self.scopes: list[tuple[Function, dict[str, Binding]]] = []
        self.fn = Function(None, None)
        self.result.functions.append(self.fn)
        self.tasks: list[Task] = []

    # task plumbing ---------------------------------------------------------------------

    def do(self, *tasks: Task) -> None:
        """Run `tasks` in order, before anything scheduled earlier."""
        self.tasks.extend(reversed(tasks))

    def run(self, root: Node) -> Analysis:
        # Every word, in code, strings and comments alike: a superset of the identifiers.
        self.result.names = {w.decode() for w in set(_WORD.findall(root.text or b""))}
        self.do(self.open, lambda: self.block_body(root), self.close)
        while self.tasks:
            self.tasks.pop()()
        return self.result

    def open(self) -> None:
        self.scopes.append((self.fn, {}))

    def close(self) -> None:
        fn, scope = self.scopes.pop()
        fn.active -= len(scope)

    def declare(self, identifier: Node) -> Binding:
        binding = Binding(text(identifier), self.fn, identifier, [identifier])
        self.scopes[-1][1][binding.name] = binding
        self.result.bindings.append(binding)
        self.result.resolved[identifier.start_byte] = binding
        self.fn.active += 1
        self.fn.max_active = max(self.fn.max_active, self.fn.active)
        return binding

    def reference(self, identifier: Node) -> None:
        name = text(identifier)
        for _, scope in reversed(self.scopes):
            binding = scope.get(name)
            if binding is not None:
                binding.references.append(identifier)
                self.result.resolved[identifier.start_byte] = binding
                fn: Function | None = self.fn
                while fn is not None and fn is not binding.function:
                    fn.upvalues.add(id(binding))
                    fn = fn.parent
                return
        self.result.globals.setdefault(name, []).append(identifier)

    def unsupported(self, node: Node) -> None:
        self.result.unsupported.append(node)

    # statements ------------------------------------------------------------------------

    def block_body(self, block: Node | None) -> None:
        if block is not None:
            self.do(*[partial(self.statement, s) for s in code_children(block)])

    def block(self, block: Node | None) -> None:
        self.do(self.open, lambda: self.block_body(block), self.close)

    def statement(self, node: Node) -> None:
        handler = _STATEMENTS.get(node.type)
        if handler is None:
            self.unsupported(node)
        else:
            handler(self, node)

    def local_declaration(self, node: Node) -> None:
        assign = next((c for c in node.named_children if c.type == "assignment_statement"), None)
        holder = assign if assign is not None else node
        names = next(c for c in holder.named_children if c.type == "variable_list")
        values = next((c for c in holder.named_children if c.type == "expression_list"), None)
        self.do(lambda: self.expressions(values), lambda: self.declare_list(names))

    def declare_list(self, names: Node) -> None:
        last: Binding | None = None
        for i, child in enumerate(names.children):
            field = names.field_name_for_child(i)
            if field == "name" and child.type == "identifier":
                last = self.declare(child)
            elif field == "attribute":
                if last is not None and b"const" in (child.text or b""):
                    last.const = True
            elif child.is_named and child.type != "comment":
                self.type_annotation(child)

    def function_declaration(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            self.unsupported(node)
            return
        if is_local(node):
            self.declare(name)
            self.function(node, method=False)
            return
        method = name.type == "method_index_expression"
        if name.type == "identifier":
            self.reference(name)
        else:
            self.expression(name)
        self.function(node, method=method)

    def function(self, node: Node, *, method: bool) -> None:
        params = node.child_by_field_name("parameters")
        body = node.child_by_field_name("body")
        skip = {c.id for c in (params, body, node.child_by_field_name("name")) if c is not None}
        for child in code_children(node):
            if child.id not in skip:
                self.type_annotation(child)
        parent = self.fn

        def enter() -> None:
            self.fn = Function(node, parent)
            self.result.functions.append(self.fn)
            self.open()
            if method:
                implicit = Binding("self", self.fn, None)
                self.result.bindings.append(implicit)
                self.scopes[-1][1]["self"] = implicit
                self.fn.active += 1
                self.fn.max_active = self.fn.active
            for param in code_children(params) if params is not None else []:
                parts = code_children(param)
                if parts and parts[0].type == "identifier":
                    self.declare(parts[0])
                for extra in parts[1:]:
                    self.type_annotation(extra)

        def leave() -> None:
            self.close()
            self.fn = parent

        self.do(enter, lambda: self.block(body), leave)

    def assignment(self, node: Node) -> None:
        for child in code_children(node):
            if child.type == "variable_list":
                for target in code_children(child):
                    if target.type == "identifier":
                        self.reference(target)
                    else:
                        self.expression(target)
            else:
                self.expressions(child)

    def do_statement(self, node: Node) -> None:
        self.block(node.child_by_field_name("body"))

    def while_statement(self, node: Node) -> None:
        self.do(lambda: self.expression(node.child_by_field_name("condition")),
                lambda: self.block(node.child_by_field_name("body")))

    def repeat_statement(self, node: Node) -> None:
        # The `until` condition sees the body's locals.
        self.do(self.open, lambda: self.block_body(node.child_by_field_name("body")),
                lambda: self.expression(node.child_by_field_name("condition")), self.close)

    def if_statement(self, node: Node) -> None:
        branches = [c for c in code_children(node)
                    if c.type in ("elseif_statement", "else_statement")]
        self.do(*[partial(self.branch, b) for b in [node, *branches]])

    def branch(self, node: Node) -> None:
        """`if`/`elseif`: condition and consequence; `else`: body."""
        self.do(lambda: self.expression(node.child_by_field_name("condition")),
                lambda: self.block(node.child_by_field_name("consequence")
                                   or node.child_by_field_name("body")))

    def for_statement(self, node: Node) -> None:
        clause = node.child_by_field_name("clause")
        body = node.child_by_field_name("body")
        if clause is None:
            self.unsupported(node)
            return
        if clause.type == "for_numeric_clause":
            name = clause.child_by_field_name("name")
            bounds = [clause.child_by_field_name(f) for f in ("start", "end", "step")]
            skip = {c.id for c in (name, *bounds) if c is not None}
            extras = [c for c in code_children(clause) if c.id not in skip]

            def declare_numeric() -> None:
                if name is not None:
                    self.declare(name)
                for extra in extras:
                    self.type_annotation(extra)

            self.do(*[(lambda b=b: self.expression(b)) for b in bounds if b is not None],
                    self.open, declare_numeric, lambda: self.block(body), self.close)
        elif clause.type == "for_generic_clause":
            names = next(c for c in clause.named_children if c.type == "variable_list")
            values = next((c for c in clause.named_children if c.type == "expression_list"),
                          None)
            self.do(lambda: self.expressions(values), self.open,
                    lambda: self.declare_list(names), lambda: self.block(body), self.close)
        else:
            self.unsupported(clause)

    def return_statement(self, node: Node) -> None:
        for child in code_children(node):
            self.expressions(child)

    def nothing(self, node: Node) -> None:
        pass

    # expressions -----------------------------------------------------------------------

    def expressions(self, node: Node | None) -> None:
        if node is None:
            return
        if node.type == "expression_list":
            self.each(list(code_children(node)))
        else:
            self.expression(node)

    def expression(self, node: Node | None) -> None:
        if node is None:
            return
        handler = _EXPRESSIONS.get(node.type)
        if handler is None:
            self.unsupported(node)
        else:
            handler(self, node)

    def each(self, nodes: list[Node | None]) -> None:
        # Each expression's own handler is scheduled directly (what `expression` would call
        # when the task runs), and literals, which resolve nothing, are not scheduled at all:
        # a script's tree has hundreds of thousands of these.
        tasks: list[Task] = []
        for n in nodes:
            if n is None:
                continue
            kind = n.type
            if kind in _LEAVES:
                continue
            handler = _EXPRESSIONS.get(kind)
            tasks.append(partial(self.unsupported, n) if handler is None
                         else partial(handler, self, n))
        self.do(*tasks)

    def identifier(self, node: Node) -> None:
        self.reference(node)

    def string(self, node: Node) -> None:
        parts = [c for c in node.named_children if c.type == "interpolation"]
        self.each([e for p in parts for e in code_children(p)])

    def function_definition(self, node: Node) -> None:
        self.function(node, method=False)

    def function_call(self, node: Node) -> None:
        callee = node.child_by_field_name("name")
        if callee is not None and callee.type == "method_index_expression":
            callee = callee.child_by_field_name("table")
        args = node.child_by_field_name("arguments")
        self.each([callee, *(code_children(args) if args is not None else [])])

    def index(self, node: Node) -> None:
        self.expression(node.child_by_field_name("table"))

    def bracket_index(self, node: Node) -> None:
        self.each([node.child_by_field_name("table"), node.child_by_field_name("field")])

    def parenthesized(self, node: Node) -> None:
        self.each(list(code_children(node)))

    def binary(self, node: Node) -> None:
        self.each([node.child_by_field_name("left"), node.child_by_field_name("right")])

    def unary(self, node: Node) -> None:
        self.expression(node.child_by_field_name("operand"))

    def table_constructor(self, node: Node) -> None:
        parts: list[Node | None] = []
        for field in code_children(node):
            if field.children and field.children[0].type == "[":
                parts.append(field.child_by_field_name("name"))
            parts.append(field.child_by_field_name("value"))
        self.each(parts)

    def if_expression(self, node: Node) -> None:
        parts: list[Node | None] = []
        for child in [node, *code_children(node)]:
            if child is node or child.type in ("elseif_clause", "else_clause"):
                parts.append(child.child_by_field_name("condition"))
                parts.append(child.child_by_field_name("consequence"))
        self.each(parts)

    def cast(self, node: Node) -> None:
        value, *types = code_children(node)
        self.expression(value)
        for t in types:
            self.type_annotation(t)

    # types -----------------------------------------------------------------------------

    def type_annotation(self, node: Node) -> None:
        """Types are not values, except the expression inside `typeof(...)`."""
        values: list[Node | None] = []
        for child in walk(node):
            kids = child.children
            for i, kid in enumerate(kids):
                if kid.type == "typeof" and not kid.is_named:
                    values.extend(k for k in kids[i + 1:i + 3] if k.is_named)
        self.each(values)


_Handler = Callable[[_Analyzer, Node], None]

_STATEMENTS: dict[str, _Handler] = {
    "variable_declaration": _Analyzer.local_declaration,
    "function_declaration": _Analyzer.function_declaration,
    "assignment_statement": _Analyzer.assignment,
    "update_statement": _Analyzer.assignment,
    "function_call": _Analyzer.function_call,
    "do_statement": _Analyzer.do_statement,
    "while_statement": _Analyzer.while_statement,
    "repeat_statement": _Analyzer.repeat_statement,
    "if_statement": _Analyzer.if_statement,
    "for_statement": _Analyzer.for_statement,
    "return_statement": _Analyzer.return_statement,
    "break_statement": _Analyzer.nothing,
    "continue_statement": _Analyzer.nothing,
    "empty_statement": _Analyzer.nothing,
    "type_definition": _Analyzer.type_annotation,
}

_EXPRESSIONS: dict[str, _Handler] = {
    "identifier": _Analyzer.identifier,
    "number": _Analyzer.nothing,
    "string": _Analyzer.string,
    "nil": _Analyzer.nothing,
    "true": _Analyzer.nothing,
    "false": _Analyzer.nothing,
    "vararg_expression": _Analyzer.nothing,
    "function_definition": _Analyzer.function_definition,
    "function_call": _Analyzer.function_call,
    "dot_index_expression": _Analyzer.index,
    "method_index_expression": _Analyzer.index,
    "bracket_index_expression": _Analyzer.bracket_index,
    "parenthesized_expression": _Analyzer.parenthesized,
    "binary_expression": _Analyzer.binary,
    "unary_expression": _Analyzer.unary,
    "table_constructor": _Analyzer.table_constructor,
    "if_expression": _Analyzer.if_expression,
    "cast_expression": _Analyzer.cast,
}


# Expressions whose handler does nothing: no variable can appear in them.
_LEAVES = frozenset(kind for kind, handler in _EXPRESSIONS.items()
                    if handler is _Analyzer.nothing)


def analyse(root: Node) -> Analysis:
    """Resolve every variable of the chunk `root` (which must parse without errors)."""
    return _Analyzer().run(root)
