"""`rename_locals`: every local variable gets a fresh, marked name.

Each binding gets a name of its own, distinct from every identifier spelled anywhere in the
script, so no renamed variable can capture or be captured by another variable, a global or
a shadowed local. Globals, fields, method names, table keys and types keep their spelling.
A method's implicit `self` keeps its name (its declaration is not written out).
"""

from __future__ import annotations

from adapters_protection.analysis import Analysis
from adapters_protection.edits import Edit, apply
from adapters_protection.names import Namer


def rename_edits(analysis: Analysis, namer: Namer) -> list[Edit]:
    edits: list[Edit] = []
    for binding in analysis.bindings:
        if binding.declaration is None:
            continue
        new = namer.fresh().encode()
        edits += [(ref.start_byte, ref.end_byte, new) for ref in binding.references]
    return edits


def rename_locals(data: bytes, analysis: Analysis, namer: Namer) -> bytes:
    return apply(data, rename_edits(analysis, namer))
