"""One process at a time for set-up the test workers share (installing Chromium, npm
packages into `.venv/`): the suite runs in several pytest-xdist workers, and two `apt-get` or
`npm ci` runs into one place at once fail or leave a half-written tree."""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold a machine-wide lock called `name` (a file lock, released if the holder dies)."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"licore-test-lock-{digest}"
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
