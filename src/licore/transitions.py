"""One small function that applies a transition table, the way h11 applies its own.

A table maps (state, event) to an outcome. The outcome is either the next state together with
the name of the side effect the caller must perform, or an error class to raise. Tables are
plain dicts so they read like the specification's tables row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

import attrs

from licore.errors import LicoreError

S = TypeVar("S")
E = TypeVar("E")


@attrs.frozen
class Go(Generic[S]):
    """A row that moves to `next` and asks the caller to do `effect` (or nothing)."""

    next: S
    effect: str | None = None


@attrs.frozen
class Fail:
    """A row that refuses the event with one of the specification's errors."""

    error: Callable[[], LicoreError]


Outcome = Go[S] | Fail


def step(table: Mapping[tuple[S, E], Outcome[S]], state: S, event: E) -> Go[S]:
    """The outcome of `event` in `state`; raises the row's error, or `LicoreError` if none."""
    try:
        outcome = table[(state, event)]
    except KeyError:
        raise LicoreError(f"no transition for {event!r} in {state!r}") from None
    if isinstance(outcome, Fail):
        raise outcome.error()
    return outcome
