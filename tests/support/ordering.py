"""Run the longest test modules first, so parallel workers finish together.

The suite runs in pytest-xdist workers that each take whole modules (`--dist loadfile`: a
module's servers start once). Modules go out in collection order; when the longest come last,
one worker runs long after the others are idle. `tests/durations.json` holds each module's
measured seconds; `LICORE_RECORD_DURATIONS=tests/durations.json python3 dev.py test` measures
them again. A module missing from the file counts as quick.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _measured() -> dict[str, float]:
    try:
        loaded = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def longest_first(items: list[pytest.Item]) -> None:
    seconds = _measured()
    # A stable sort keeps each module's tests in their written order, next to each other.
    items.sort(key=lambda item: -seconds.get(_module(item.nodeid), 0.0))


class DurationRecorder:
    """Adds up each module's setup, call and teardown seconds (on the controller, where
    xdist reports every worker's tests) and writes them where the variable says."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_module(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return  # a worker: the controller writes the whole suite's figures
        ranked = {module: round(s, 1) for module, s in
                  sorted(self.seconds.items(), key=lambda pair: -pair[1])}
        self.target.write_text(json.dumps(ranked, indent=1) + "\n", encoding="utf-8")


def recorder() -> DurationRecorder | None:
    target = os.environ.get("LICORE_RECORD_DURATIONS")
    return DurationRecorder(Path(target)) if target else None
