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
  `continue = 1`), or a name that, somewhere in the block, means a global or a variable
  declared outside the block (declaring the local earlier would capture it);
- a function so full of locals that the extra ones would pass Luau's limit of 200.
A `return` may only end a block, so it ends its branch and needs no state change. Type
declarations are moved ahead of the loop (they are not run, and `export type` must stay at
the top level).
"""

from __future__ import annotations

from bisect import bisect_left

import tree_sitter

from adapters_protection.analysis import Analysis, Binding, Function
from adapters_protection.edits import prelude_offset
from adapters_protection.names import Namer
from adapters_protection.syntax import (
    FUNCTIONS,
    LANGUAGE,
    LOOPS,
    RESERVED,
    Node,
    code_children,
    is_local,
    text,
)

_MAX_LOCALS = 200
_RESERVED_LOCALS = 3  # the dispatch state, and the two locals hoisting and encryption add
_BLOCKS = tree_sitter.Query(LANGUAGE, "(block) @block")
_JUMPS = tree_sitter.Query(LANGUAGE, "[(break_statement) (continue_statement)] @jump")
_CHAIN = 4  # branches tested one after another before the search splits
_SKIPPED = frozenset({"type_definition", "empty_statement"})


def _blocks_with_jumps(root: Node) -> set[int]:
    """Blocks a break/continue would leave if they were flattened: those between each jump
    and the loop it belongs to, that loop's body included."""
    marked: set[int] = set()
    jumps = tree_sitter.QueryCursor(_JUMPS).captures(root).get("jump", [])
    for jump in jumps:
        node = jump.parent
        while node is not None and node.type not in LOOPS and node.type not in FUNCTIONS:
            if node.type in ("block", "chunk"):
                marked.add(node.id)
            node = node.parent
    return marked


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
        # Where each name is spelled as a variable, and which variable it is (None: global).
        self.uses: dict[str, list[tuple[int, Binding | None]]] = {}
        for binding in analysis.bindings:
            for ref in binding.references:
                self.uses.setdefault(binding.name, []).append((ref.start_byte, binding))
        for name, refs in analysis.globals.items():
            self.uses.setdefault(name, []).extend((ref.start_byte, None) for ref in refs)
        for entries in self.uses.values():
            entries.sort(key=lambda e: e[0])
        self.functions = {fn.node.id: fn for fn in analysis.functions if fn.node is not None}
        self.main = analysis.functions[0]
        self.plans: dict[int, list[Binding]] = {}
        self.jumpy = _blocks_with_jumps(root)
        blocks = tree_sitter.QueryCursor(_BLOCKS).captures(root).get("block", [])
        starts = []
        for node in [root, *blocks]:
            locals_ = self._eligible(node)
            if locals_ is not None:
                self.plans[node.id] = locals_
                starts.append(node.start_byte)
        self.starts = sorted(starts)

    def _function_of(self, block: Node) -> Function:
        node = block.parent
        while node is not None:
            if node.type in FUNCTIONS:
                return self.functions[node.id]
            node = node.parent
        return self.main

    def _eligible(self, block: Node) -> list[Binding] | None:
        statements = [s for s in code_children(block) if s.type not in _SKIPPED]
        if len(statements) < 2 or block.id in self.jumpy:
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
        for binding in locals_:
            uses = self.uses[binding.name]
            i = bisect_left(uses, block.start_byte, key=lambda e: e[0])
            while i < len(uses) and uses[i][0] < block.end_byte:
                if not self._unaffected(uses[i][1], binding, block):
                    return None
                i += 1
        return locals_

    @staticmethod
    def _unaffected(owner: Binding | None, local: Binding, block: Node) -> bool:
        """Whether a use of `local`'s name that means `owner` still does once `local` is
        declared at the top of `block`: yes for `local` itself and for variables declared
        inside the block (they shadow it); no for globals and outer variables."""
        if owner is local:
            return True
        if owner is None or owner.declaration is None:
            return False
        return block.start_byte <= owner.declaration.start_byte < block.end_byte

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
