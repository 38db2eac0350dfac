"""`flatten`: a block's statements become the branches of a dispatch loop.

    local a                      -- the block's locals, declared up front
    local z, st = 4410, 9345012  -- mixer and state
    while true do
      z = z + st
      if st == 5521 then <statement 3> break
      elseif st == 77120 then <statement 2> st = z - 9345012
      elseif st == 802113 then st = 1288 - z                 -- a decoy, never run
      elseif st == 9345012 then <statement 1>
        if z * (z + 1) % 2 == 0 then st = z + 3901 else st = 7101 - z end
      end
    end

State numbers are keyed by the license; branches are ordered by state number (so their
order is keyed too) and found by bisection once there are more than a few. The next state
is computed, never written (see `_Machine`). Every
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

from adapters_protection.edits import prelude_offset
from adapters_protection.names import Namer
from adapters_protection.scopes import GLOBAL, Scopes
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
_RESERVED_LOCALS = 2  # dispatch state and mixer (literals run before and are counted)
_BLOCKS = tree_sitter.Query(LANGUAGE, "(block) @block")
_JUMPS = tree_sitter.Query(LANGUAGE, "[(break_statement) (continue_statement)] @jump")
_CHAIN = 4  # branches tested one after another before the search splits
_MIN_STATEMENTS = 3  # two statements in a dispatch loop hide little and cost a lot
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


def _declared(statement: Node, scopes: Scopes) -> list[int] | None:
    """The locals a statement declares into its block ([] if none, None if unknown)."""
    if statement.type == "variable_declaration":
        holder = next((c for c in statement.named_children
                       if c.type == "assignment_statement"), statement)
        names = next(c for c in holder.named_children if c.type == "variable_list")
        found = [scopes.variable_at.get(c.start_byte) for i, c in enumerate(names.children)
                 if names.field_name_for_child(i) == "name"]
    elif statement.type == "function_declaration" and is_local(statement):
        name = statement.child_by_field_name("name")
        found = [scopes.variable_at.get(name.start_byte)] if name is not None else [None]
    else:
        return []
    return None if any(v is None for v in found) else [v for v in found if v is not None]


class _Flattener:
    def __init__(self, data: bytes, root: Node, scopes: Scopes, namer: Namer,
                 keep: range) -> None:
        self.data = data
        self.scopes = scopes
        self.namer = namer
        # Where each name is spelled as a variable, and which variable it is.
        self.uses = scopes.uses
        self.plans: dict[int, list[int]] = {}
        self.jumpy = _blocks_with_jumps(root)
        blocks = tree_sitter.QueryCursor(_BLOCKS).captures(root).get("block", [])
        starts = []
        for node in [root, *blocks]:
            if node is not root and node.start_byte in keep:
                continue
            locals_ = self._eligible(node)
            if locals_ is not None:
                self.plans[node.id] = locals_
                starts.append(node.start_byte)
        self.starts = sorted(starts)

    def _max_active(self, block: Node) -> int:
        """Most locals active at once in the function holding `block`."""
        node = block.parent
        while node is not None:
            if node.type in FUNCTIONS:
                return self.scopes.max_active[node.start_byte]
            node = node.parent
        return self.scopes.main_max_active

    def _eligible(self, block: Node) -> list[int] | None:
        statements = [s for s in code_children(block) if s.type not in _SKIPPED]
        if len(statements) < _MIN_STATEMENTS or block.id in self.jumpy:
            return None
        locals_: list[int] = []
        for statement in statements:
            declared = _declared(statement, self.scopes)
            if declared is None:
                return None
            locals_ += declared
        names = [self.scopes.names[v] for v in locals_]
        if (len(set(names)) != len(names) or any(self.scopes.const[v] for v in locals_)
                or RESERVED.intersection(names)):
            return None
        if self._max_active(block) + len(locals_) + _RESERVED_LOCALS > _MAX_LOCALS:
            return None
        for variable, name in zip(locals_, names, strict=True):
            uses = self.uses[name]
            i = bisect_left(uses, block.start_byte, key=lambda e: e[0])
            while i < len(uses) and uses[i][0] < block.end_byte:
                if not self._unaffected(uses[i][1], variable, block):
                    return None
                i += 1
        return locals_

    def _unaffected(self, owner: int, local: int, block: Node) -> bool:
        """Whether a use of `local`'s name that means `owner` still does once `local` is
        declared at the top of `block`: yes for `local` itself and for variables declared
        inside the block (they shadow it); no for globals and outer variables."""
        if owner == local:
            return True
        if owner == GLOBAL:
            return False
        return block.start_byte <= self.scopes.declared_at[owner] < block.end_byte

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
        machine = _Machine(self.namer, len(statements))
        head = [f"local {', '.join(predeclared)}"] if predeclared else []
        # Spaces around it: the block may touch its `do`/`end` in a minified script.
        return " " + " ".join([*types, *head, machine.start(),
                               f"while true do {machine.dispatch(statements, bodies)} end "])


_STATE_BITS = 20
_DECOY_EVERY = 4  # one decoy branch per this many statements
_OPAQUE_EVERY = 3  # about one transition in this many hides behind an opaque predicate


class _Machine:
    """The dispatch states of one flattened block, and the code that moves between them.

    Two locals drive the loop: the state, and a mixer that adds up every state the loop
    has been in (`z = z + st` at the top of each turn). A branch never names the state it
    goes to: it computes it from the mixer (`st = z + 6108`), whose value depends on every
    branch run before, so reading the next state off a branch means replaying the whole
    dispatch from its start. Some transitions sit behind an opaque predicate (a test of the
    mixer that always holds, like `z + z + 1` being odd) whose other side leads to a decoy
    branch, which never runs but looks like the others. Every number comes from the
    per-license `namer`. The mixer stays a whole number far below 2^53 (states are below
    2^20), so every test is exact."""

    def __init__(self, namer: Namer, count: int) -> None:
        self.namer = namer
        self.state, self.mixer = namer.fresh(), namer.fresh()
        self.count = count
        taken: set[int] = set()
        numbers: list[int] = []
        decoys = max(1, count // _DECOY_EVERY)
        while len(numbers) < count + decoys:
            n = namer.number(_STATE_BITS)
            if n not in taken:
                taken.add(n)
                numbers.append(n)
        self.real, self.decoys = numbers[:count], numbers[count:]
        self.first_mixer = namer.number(_STATE_BITS)

    def start(self) -> str:
        return f"local {self.mixer},{self.state}={self.first_mixer},{self.real[0]}"

    def _goto(self, mixer: int, target: int) -> str:
        """Set the state to `target`, given the mixer's value at this point."""
        if self.namer.number(1):
            return f"{self.state}={self.mixer}+{target - mixer}"
        return f"{self.state}={target + mixer}-{self.mixer}"

    def _opaque(self) -> str:
        """A test of the mixer (a whole number) that always holds. (Past 2^53 a product
        rounds to an even number, so the first stays true even then.)"""
        z = self.mixer
        return [f"{z}*({z}+1)%2==0", f"({z}+{z}+1)%2>0",
                f"({z}-{z}%3)%3==0", f"{z}%2+({z}+1)%2==1"][
                    self.namer.number(2)]

    def dispatch(self, statements: list[Node], bodies: list[str]) -> str:
        mixer = self.first_mixer
        branches = []
        for i, (statement, body) in enumerate(zip(statements, bodies, strict=True)):
            here = self.real[i]
            mixer += here  # the loop's first step, before this branch runs
            if i + 1 == len(statements):
                tail = "" if statement.type == "return_statement" else " break"
            else:
                tail = " " + self._goto(mixer, self.real[i + 1])
                if self.namer.number(8) % _OPAQUE_EVERY == 0:
                    decoy = self.decoys[self.namer.number(16) % len(self.decoys)]
                    tail = (f" if {self._opaque()} then{tail} "
                            f"else {self._goto(mixer, decoy)} end")
            branches.append((here, f"{body}{tail}"))
        for decoy in self.decoys:
            target = self.real[self.namer.number(16) % self.count]
            guess = self.first_mixer + self.namer.number(_STATE_BITS + 2)
            branches.append((decoy, self._goto(guess, target)))
        return (f"{self.mixer}={self.mixer}+{self.state} "
                + _search(self.state, sorted(branches)))


def _search(state: str, branches: list[tuple[int, str]]) -> str:
    """Branches ordered by state number, found by bisection: a long `elseif` chain would
    pass Luau's parser recursion limit (and be slow)."""
    if len(branches) <= _CHAIN:
        return "if " + " elseif ".join(f"{state}=={n} then {code}"
                                         for n, code in branches) + " end"
    mid = len(branches) // 2
    return (f"if {state}<{branches[mid][0]} then {_search(state, branches[:mid])} "
            f"else {_search(state, branches[mid:])} end")


def flatten(data: bytes, root: Node, scopes: Scopes, namer: Namer,
            keep: range = range(0)) -> bytes:
    """`data` with its blocks flattened, but for blocks that start in `keep`."""
    flattener = _Flattener(data, root, scopes, namer, keep)
    if not flattener.plans:
        return data
    directives = data[:prelude_offset(data)] if root.id in flattener.plans else b""
    return directives + flattener.render(root).lstrip().encode()
