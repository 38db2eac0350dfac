"""How often the delivery loops run the scheduled sweeps (license expiry and reminders) is an
operator's setting (docs/operators.md, `LICORE_OUTBOX_SWEEP_MS`), checked like the others,
and the loop runs its sweep again at that interval, not at the default's."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Sequence

import pytest

from licore.events import Message
from licore_cli import settings
from licore_cli.worker import SCHEDULE_EVERY, work_forever

EMPTY = {"LICORE_CONFIG": ""}


def test_the_sweep_interval_defaults_to_20_s_and_is_checked() -> None:
    assert settings.load(EMPTY).events.sweep_ms == 20000 == SCHEDULE_EVERY * 1000
    assert settings.load({**EMPTY, "LICORE_OUTBOX_SWEEP_MS": "250"}).events.sweep_ms == 250
    for bad in ("99", "60001", "often"):
        with pytest.raises(settings.SettingsError, match="LICORE_OUTBOX_SWEEP_MS"):
            settings.load({**EMPTY, "LICORE_OUTBOX_SWEEP_MS": bad})


class _NothingDue:
    """A delivery with an empty outbox: the loop under test only polls it."""

    async def claim(self, worker: str, limit: int) -> Sequence[Message]:
        return ()

    async def backlog(self) -> int:
        return 0


async def test_the_loop_sweeps_again_after_the_interval_it_is_given() -> None:
    swept = asyncio.Event()
    runs: list[float] = []

    async def sweep() -> int:
        runs.append(asyncio.get_running_loop().time())
        if len(runs) == 3:
            swept.set()
        return 0

    loop = asyncio.create_task(work_forever(_NothingDue(), 0.01,  # type: ignore[arg-type]
                                            scheduled=sweep, schedule_every=0.05))
    try:
        await asyncio.wait_for(swept.wait(), 10)  # a deadline: the default would take 40 s
    finally:
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    assert all(later - earlier >= 0.05 for earlier, later in itertools.pairwise(runs))
