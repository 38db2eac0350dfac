"""What `flatten` asks of a script's scope analysis, by byte offset in the text it flattens.

Flatten runs on the copy the literal pass wrote (renamed, literals encrypted or hoisted,
declarations added at the top). Analysing that copy again costs more than analysing the
original did (every literal became an expression of several nodes), and tells nothing new:
the pass moves identifiers without changing which variable each one is, renames variables
one for one, and adds only the declarations at the top and reads of what they declare. So
the original's analysis is carried over (`carried`), its offsets moved by the pass's
edits; `of` reads an analysis of the text itself.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Sequence

import attrs

from adapters_protection.analysis import Analysis
from adapters_protection.edits import Edit

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
GLOBAL = -1  # in `Scopes.uses`: the name means a global there


@attrs.frozen
class Scopes:
    """Variables are numbered; offsets are those of identifiers (and function nodes)."""

    names: list[str]  # each variable's name
    const: list[bool]  # declared `<const>`
    declared_at: list[int]  # where each is declared (-1: a method's implicit `self`)
    uses: dict[str, list[tuple[int, int]]]  # name -> (offset, variable or GLOBAL), in order
    variable_at: dict[int, int]  # identifier offset -> its variable
    max_active: dict[int, int]  # function node's start -> most locals active at once in it
    main_max_active: int  # the same for the chunk


def of(analysis: Analysis) -> Scopes:
    """The scopes of the text `analysis` was made of."""
    return carried(analysis, lambda at: at, None)


# A declaration the literal pass added at the top, and the globals its value reads.
Added = tuple[str, int, Sequence[tuple[str, int]]]


def carried(analysis: Analysis, moved: Callable[[int], int], data: bytes | None,
            added: Sequence[Added] = ()) -> Scopes:
    """The scopes of a text made from `analysis`'s by edits that moved each identifier to
    `moved(offset)` and may have renamed locals (`data`, the new text, then says how), with
    `added` locals declared at the chunk's top (name, offset, the globals their value
    reads). Reads of the added locals are left out: each is the only variable of its name
    (a fresh name), which is all flatten asks of it."""
    names: list[str] = []
    const: list[bool] = []
    declared_at: list[int] = []
    uses: dict[str, list[tuple[int, int]]] = {}
    variable_at: dict[int, int] = {}
    for index, binding in enumerate(analysis.bindings):
        declaration = binding.declaration
        at = moved(declaration.start_byte) if declaration is not None else -1
        name = binding.name
        if data is not None and at >= 0:
            word = _WORD.match(data, at)
            assert word is not None
            name = word.group().decode()
        names.append(name)
        const.append(binding.const)
        declared_at.append(at)
        spelled = uses.setdefault(name, [])
        for ref in binding.references:
            where = moved(ref.start_byte)
            spelled.append((where, index))
            variable_at[where] = index
    for name, refs in analysis.globals.items():
        uses.setdefault(name, []).extend((moved(ref.start_byte), GLOBAL) for ref in refs)
    for name, at, reads in added:
        index = len(names)
        names.append(name)
        const.append(False)
        declared_at.append(at)
        uses.setdefault(name, []).append((at, index))
        variable_at[at] = index
        for read, offset in reads:
            uses.setdefault(read, []).append((offset, GLOBAL))
    for entries in uses.values():
        entries.sort()
    functions = analysis.functions
    return Scopes(names, const, declared_at, uses, variable_at,
                  {moved(fn.node.start_byte): fn.max_active for fn in functions
                   if fn.node is not None},
                  functions[0].max_active + len(added))


def mover(edits: Sequence[Edit], inserted_at: int, inserted: int) -> Callable[[int], int]:
    """Where an offset of a text lands once `edits` are applied and then `inserted` bytes
    put at `inserted_at` (of the edited text). For offsets outside every edit, or at an
    edit's start."""
    ordered = sorted(edits, key=lambda e: e[0])
    starts = [e[0] for e in ordered]
    shifts = [0]
    for start, end, new in ordered:
        shifts.append(shifts[-1] + len(new) - (end - start))

    def moved(at: int) -> int:
        shifted = at + shifts[bisect_left(starts, at)]
        return shifted + inserted if shifted >= inserted_at else shifted

    return moved
