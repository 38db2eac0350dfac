"""`flatten`: a block's statements become the branches of a dispatch loop.

    local a                      -- the block's locals, declared up front
    local st = 9345012
    while true do
      if st == 5521 then <statement 3> break
      elseif st == 77120 then <statement 2> st = 5521
      elseif st == 9345012 then <statement 1> st = 77120
      end
    end

State numbers are keyed by the license; branches are ordered by state number (so their
order is keyed too) and found by bisection once there are more than a few. Every
statement still runs once, in order. A block is left as written whenever that could
change what it does:
- a `break` or `continue` that would leave the block (it would leave the dispatch loop);
- a local that cannot be declared up front: a `<const>` local, two locals of one name, a
  local named like a contextual keyword (`local continue = 1` cannot become
  `continue = 1`), or a name that, anywhere in the block, also means another variable or a
  global;
- a function so full of locals that the extra ones would pass Luau's limit of 200.
A `return` may only end a block, so it ends its branch and needs no state change. Type
declarations are moved ahead of the loop (they are not run, and `export type` must stay at
the top level).
"""

from __future__ import annotations

from bisect import bisect_left

from adapters_protection.analysis import Analysis, Binding, Function
from adapters_protection.edits import prelude_offset
from adapters_protection.names import Namer
from adapters_protection.syntax import (
    FUNCTIONS,
    LOOPS,
    RESERVED,
    Node,
    code_children,
    is_local,
    text,
    walk,
)

_MAX_LOCALS = 200
_RESERVED_LOCALS = 3  # the dispatch state, and the two locals hoisting and encryption add
_CHAIN = 4  # branches tested one after another before the search splits
_SKIPPED = frozenset({"type_definition", "empty_statement"})


def _escapes_loop(statement: Node) -> bool:
    """Whether a break/continue in `statement` targets a loop outside it."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if node.type in ("break_statement", "continue_statement"):
            return True
        if node.type not in LOOPS and node.type not in FUNCTIONS:
            stack.extend(node.children)
    return False


def _declared(statement: Node, analysis: Analysis) -> list[Binding] | None:
    """The locals a statement declares into its block ([] if none, None if unknown)."""
    if statement.type == "variable_declaration":
        holder = next((c for c in statement.named_children
                       if c.type == "assignment_statement"), statement)
        names = next(c for c in holder.named_children if c.type == "variable_list")
        found = [analysis.binding_of(c) for i, c in enumerate(names.children)
                 if names.field_name_for_child(i) == "name"]
    elif statement.type == "function_declaration" and is_local(statement):
        name = statement.child_by_field_name("name")
        found = [analysis.binding_of(name)] if name is not None else [None]
    else:
        return []
    return None if any(b is None for b in found) else [b for b in found if b is not None]


class _Flattener:
    def __init__(self, data: bytes, root: Node, analysis: Analysis, namer: Namer) -> None:
        self.data = data
        self.analysis = analysis
        self.namer = namer
        self.global_refs = {n.start_byte for refs in analysis.globals.values() for n in refs}
        self.functions = {fn.node.id: fn for fn in analysis.functions if fn.node is not None}
        self.main = analysis.functions[0]
        self.plans: dict[int, list[Binding]] = {}
        for node in walk(root):
            if node.type in ("chunk", "block"):
                locals_ = self._eligible(node)
                if locals_ is not None:
                    self.plans[node.id] = locals_
        self.starts = sorted(n.start_byte for n in walk(root) if n.id in self.plans)

    def _function_of(self, block: Node) -> Function:
        node = block.parent
        while node is not None:
            if node.type in FUNCTIONS:
                return self.functions[node.id]
            node = node.parent
        return self.main

    def _eligible(self, block: Node) -> list[Binding] | None:
        statements = [s for s in code_children(block) if s.type not in _SKIPPED]
        if len(statements) < 2 or any(_escapes_loop(s) for s in statements):
            return None
        locals_: list[Binding] = []
        for statement in statements:
            declared = _declared(statement, self.analysis)
            if declared is None:
                return None
            locals_ += declared
        names = [b.name for b in locals_]
        if (len(set(names)) != len(names) or any(b.const for b in locals_)
                or RESERVED.intersection(names)):
            return None
        if self._function_of(block).max_active + len(locals_) + _RESERVED_LOCALS > _MAX_LOCALS:
            return None
        if locals_:
            mine = {b.name: b for b in locals_}
            for node in walk(block):
                if node.type != "identifier" or text(node) not in mine:
                    continue
                owner = self.analysis.binding_of(node)
                if owner is not None and owner is not mine[text(node)]:
                    return None
                if owner is None and node.start_byte in self.global_refs:
                    return None
        return locals_

    def _has_plan(self, lo: int, hi: int) -> bool:
        i = bisect_left(self.starts, lo)
        return i < len(self.starts) and self.starts[i] < hi

    def render(self, node: Node) -> str:
        if node.id in self.plans:
            return self._dispatch(node)
        return self.span(node, node.start_byte, node.end_byte)

    def span(self, node: Node, lo: int, hi: int) -> str:
        """Bytes [lo, hi) of `node`, with planned blocks inside it flattened."""
        if not self._has_plan(lo, hi):
            return self.data[lo:hi].decode()
        out: list[str] = []
        pos = lo
        for child in node.children:
            if child.end_byte <= lo or child.start_byte >= hi:
                continue
            if child.id in self.plans or self._has_plan(child.start_byte, child.end_byte):
                out += [self.data[pos:child.start_byte].decode(), self.render(child)]
                pos = child.end_byte
        out.append(self.data[pos:hi].decode())
        return "".join(out)

    def _statement(self, statement: Node, predeclared: list[str]) -> str:
        """A statement as it runs inside a branch: locals become assignments."""
        if statement.type == "variable_declaration":
            holder = next((c for c in statement.named_children
                           if c.type == "assignment_statement"), None)
            names = next(c for c in (holder or statement).named_children
                         if c.type == "variable_list")
            predeclared.append(self.render(names))
            if holder is None:
                return ""
            values = next(c for c in holder.named_children if c.type == "expression_list")
            targets = [text(c) for i, c in enumerate(names.children)
                       if names.field_name_for_child(i) == "name"]
            return f"{', '.join(targets)} = {self.render(values)}"
        if statement.type == "function_declaration" and is_local(statement):
            name = statement.child_by_field_name("name")
            assert name is not None
            predeclared.append(text(name))
            return (f"{text(name)} = function"
                    f"{self.span(statement, name.end_byte, statement.end_byte)}")
        return self.render(statement)

    def _dispatch(self, block: Node) -> str:
        children = code_children(block)
        types = [self.render(s) for s in children if s.type == "type_definition"]
        statements = [s for s in children if s.type not in _SKIPPED]
        predeclared: list[str] = []
        bodies = [self._statement(s, predeclared) for s in statements]
        state = self.namer.fresh()
        numbers: list[int] = []
        while len(numbers) < len(statements):
            n = self.namer.number()
            if n not in numbers:
                numbers.append(n)
        branches = []
        for i, (statement, body) in enumerate(zip(statements, bodies, strict=True)):
            if i + 1 < len(statements):
                tail = f" {state} = {numbers[i + 1]}"
            elif statement.type == "return_statement":
                tail = ""
            else:
                tail = " break"
            branches.append((numbers[i], f"{body}{tail}"))
        head = [f"local {', '.join(predeclared)}"] if predeclared else []
        return " ".join([*types, *head, f"local {state} = {numbers[0]}",
                         f"while true do {_search(state, sorted(branches))} end"])


def _search(state: str, branches: list[tuple[int, str]]) -> str:
    """Branches ordered by state number, found by bisection: a long `elseif` chain would
    pass Luau's parser recursion limit (and be slow)."""
    if len(branches) <= _CHAIN:
        return "if " + " elseif ".join(f"{state} == {n} then {code}"
                                         for n, code in branches) + " end"
    mid = len(branches) // 2
    return (f"if {state} < {branches[mid][0]} then {_search(state, branches[:mid])} "
            f"else {_search(state, branches[mid:])} end")


def flatten(data: bytes, root: Node, analysis: Analysis, namer: Namer) -> bytes:
    flattener = _Flattener(data, root, analysis, namer)
    if not flattener.plans:
        return data
    directives = data[:prelude_offset(data)] if root.id in flattener.plans else b""
    return directives + flattener.render(root).encode()
