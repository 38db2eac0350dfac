"""A test hook, not a setting: a server clock that end-to-end tests move forward.

With `LICORE_TEST_CLOCK_FILE` naming a file, the server's clock is the system clock plus the
seconds that file holds (nothing while it is missing or empty). A test that needs a rate
window of its own moves every process of its server to the start of the next window at
once, instead of waiting for the wall clock's minute to end (or retrying when a run
straddled one, which saw the same server's counts again). Operators never set it: only the
composition root reads it, no settings table lists it, and a shifted clock moves every
expiry, lifetime and window with it (docs/architecture.md, "Test hooks").
"""

from __future__ import annotations

import os
import time

ENV = "LICORE_TEST_CLOCK_FILE"


class ShiftedClock:
    """The system clock, moved forward by what a file says. The file is read at every call
    (a missing file costs a failed open): tests write it whole under another name and
    rename it into place, so a call sees the old shift or the new one, never half."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _shift(self) -> float:
        try:
            with open(self.path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            return 0.0
        return float(text) if text else 0.0

    def now(self) -> int:
        return int(time.time() + self._shift())

    def now_ms(self) -> int:
        return int((time.time() + self._shift()) * 1000)


def shifted_clock() -> ShiftedClock | None:
    """The shifted clock when a test asked for one."""
    path = os.environ.get(ENV)
    return ShiftedClock(path) if path else None
