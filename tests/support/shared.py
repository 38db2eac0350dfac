"""Where the shared test material lives: `../shared` beside the checkout, as the team lays
it out; `LICORE_SHARED` names another place (a checkout elsewhere on the machine)."""

from __future__ import annotations

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[2].parent / "shared"


def shared_dir() -> Path:
    named = os.environ.get("LICORE_SHARED")
    if named:
        return Path(named)
    if _BESIDE.is_dir():
        return _BESIDE
    return Path("/work/shared")  # the team machines' fixed place, for clones elsewhere


SHARED = shared_dir()
CORPUS = SHARED / "test-data" / "rbx-test-files"
