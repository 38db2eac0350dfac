"""Shape marks (`adapters_protection/shape.py`): what the writer writes, the reader reads
back, bit for bit, at the same positions whatever the bits; writing again changes nothing;
and a marked program does exactly what the original did, in the Luau VM."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters_protection import shape
from adapters_protection.edits import apply
from adapters_protection.syntax import Node, parser
from tests.protection.luau_programs import programs
from tests.protection.vm import run

HERE = Path(__file__).resolve().parent
SOURCES = [HERE / "realistic" / "shop.luau", *sorted((HERE / "sealed_corpus").glob("*.luau"))]


def _parse(data: bytes) -> Node:
    return parser().parse(data).root_node


def _marked(data: bytes, choose: random.Random | int) -> tuple[bytes, dict[bytes, int]]:
    root = _parse(data)
    bits: dict[bytes, int] = {}

    def bits_of(positions: Sequence[bytes]) -> list[int]:
        return [bits.setdefault(p, choose if isinstance(choose, int) else choose.randint(0, 1))
                for p in positions]

    return apply(data, shape.mark_edits(root, data, [root], bits_of)), bits


def _same_as(bits: dict[bytes, int]) -> Callable[[Sequence[bytes]], list[int]]:
    return lambda positions: [bits[p] for p in positions]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_the_reader_reads_what_the_writer_wrote_at_the_same_positions(source: Path) -> None:
    data = source.read_bytes()
    seen = []
    for choose in (0, 1, random.Random(7), random.Random(8)):
        marked, bits = _marked(data, choose)
        assert not _parse(marked).has_error
        read = shape.read(marked, _parse)
        assert read and all(bits[p] == bit for p, bit, _ in read)
        seen.append({p for p, _, _ in read})
        again = _parse(marked)
        assert apply(marked, shape.mark_edits(again, marked, [again],
                                              _same_as(bits))) == marked
    assert all(s == seen[0] for s in seen)  # the forms never move a position


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=programs(), seed=st.integers(0, 2 ** 32))
def test_marked_programs_do_what_the_original_did(source: str, seed: int) -> None:
    original = run(source)
    marked, bits = _marked(source.encode(), random.Random(seed))
    assert run(marked.decode()) == original
    assert all(bits[p] == bit for p, bit, _ in shape.read(marked, _parse))


def test_a_canonical_rewrite_leaves_positions_and_bits() -> None:
    """Mirroring comparisons, swapping operands and rewriting numbers change neither a
    site's position nor its bit."""
    data = b"local x = a + 16\nif x > b then do f(x, 0x10) end end\nt:go(x)\n"
    marked, _ = _marked(data, random.Random(3))
    rewritten = (marked.replace(b"a + 16", b"16 + a").replace(b"x > b", b"b < x")
                 .replace(b"0x10", b"16"))
    assert shape.read(marked, _parse) and [
        (p, b) for p, b, _ in shape.read(marked, _parse)] == [
        (p, b) for p, b, _ in shape.read(rewritten, _parse)]
