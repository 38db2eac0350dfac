"""Transition tables written row by row, and the one function that applies them (as h11 does).

A table maps (state, event) to an outcome: the next state together with the typed effects the
caller must perform in the same transaction, or the specification's error to raise. Every row
is written out by hand (no loops fill cells), so the table can be held next to the
specification's section 3 and ticked off; `table()` refuses a row written twice.

Events name their trigger and condition the way the specification's columns do; effects are
small enums whose values describe them. Both texts feed `render()`, which prints a table as
the rows a reader compares with the specification (docs/state-machines.md is its output).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

import attrs

from licore.errors import LicoreError


class Event(enum.Enum):
    """An event whose value is (trigger, condition), the specification's two columns.

    `creates` marks an event that makes a new record: it is answered only from the "none"
    state, since no existing record can receive it.
    """

    def __init__(self, trigger: str, condition: str = "", creates: bool = False) -> None:
        self.trigger = trigger
        self.condition = condition
        self.creates = creates


S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=Event)
F = TypeVar("F", bound=enum.Enum)


@attrs.frozen
class Go(Generic[S, F]):
    """A row that moves to `next` and asks the caller to perform `effects`, in order."""

    next: S
    effects: tuple[F, ...] = ()


@attrs.frozen
class Fail:
    """A row that refuses the event with one of the specification's errors; nothing changes."""

    error: Callable[[], LicoreError]


Outcome = Go[S, F] | Fail
Table = Mapping[tuple[S, E], Outcome[S, F]]


def table(*rows: tuple[S, E, Outcome[S, F]]) -> dict[tuple[S, E], Outcome[S, F]]:
    """The rows as a lookup, in the order written. A (state, event) written twice is a bug,
    and so is one left out: every event has a row in every state, but for an event that
    `creates`, which has rows only where there is no record yet."""
    built: dict[tuple[S, E], Outcome[S, F]] = {}
    for state, event, outcome in rows:
        if (state, event) in built:
            raise ValueError(f"two rows for {event!r} in {state!r}")
        built[(state, event)] = outcome
    if built:
        first_state, first_event = next(iter(built))
        for state in type(first_state):
            for event in type(first_event):
                if (state, event) not in built and not event.creates:
                    raise ValueError(f"no row for {event!r} in {state!r}")
    return built


def step(rows: Table[S, E, F], state: S, event: E) -> Go[S, F]:
    """The outcome of `event` in `state` (the table has a row for each: `table`); raises
    the row's error when it refuses."""
    outcome = rows[(state, event)]
    if isinstance(outcome, Fail):
        raise outcome.error()
    return outcome


def refusal_of(rows: Table[S, E, F], state: S, event: E) -> LicoreError:
    """The error a refusing row raises, for a caller that must `raise` it itself (it names
    a row that refuses)."""
    outcome = rows[(state, event)]
    assert isinstance(outcome, Fail), f"{event!r} in {state!r} is not refused"
    return outcome.error()


def effects_of(rows: Table[S, E, F], *events: E) -> frozenset[F]:
    """Every effect the rows of `events` ask for: what a caller that handles those events
    must be able to perform."""
    return frozenset(effect for (_, event), outcome in rows.items()
                     if event in events and isinstance(outcome, Go)
                     for effect in outcome.effects)


@attrs.frozen
class Rendered:
    """One row as the specification's columns: state, trigger, condition, next state, also."""

    state: str
    trigger: str
    condition: str
    next: str
    also: str

    def markdown(self) -> str:
        return (f"| {self.state} | {self.trigger} | {self.condition} | {self.next} "
                f"| {self.also} |")


def render(rows: Table[S, E, F], none: S | None = None) -> list[Rendered]:
    """Each row in the specification's words; `none` is the state shown as "(none)"."""

    def name(state: S) -> str:
        return "(none)" if state is none else str(state.value)

    out: list[Rendered] = []
    for (state, event), outcome in rows.items():
        if isinstance(outcome, Fail):
            error = outcome.error()
            nxt, also = name(state), f"HTTP {error.status}, `{error.code}`."
        else:
            nxt = name(outcome.next)
            also = " ".join(f"{str(e.value).rstrip('.')}." for e in outcome.effects)
        out.append(Rendered(name(state), event.trigger, event.condition, nxt, also))
    return out


def markdown(rows: Table[S, E, F], none: S | None = None) -> str:
    head = "| State | Trigger | Condition | Next state | Also |\n|---|---|---|---|---|\n"
    return head + "\n".join(r.markdown() for r in render(rows, none)) + "\n"
