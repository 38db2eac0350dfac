"""Adapters made on first use.

Every server worker and every operator command imports the composition root. The model
codec and protector (tree-sitter, the format readers), the platform, chat and webhook
clients (httpx) cost most of a process's start-up import time, yet a runtime-only worker
never uses the first two and most processes never send a webhook. A deferred adapter imports
and builds its adapter the first time a use case touches it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")


class _Deferred:
    __slots__ = ("_lock", "_made", "_make")

    def __init__(self, make: Callable[[], object]) -> None:
        self._make = make
        self._made: object | None = None
        # Builds run on worker threads (the offload), so two may touch it first at once.
        self._lock = threading.Lock()

    def _adapter(self) -> object:
        if self._made is None:
            with self._lock:
                if self._made is None:
                    self._made = self._make()
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter(), name)


def deferred(make: Callable[[], T]) -> T:
    """Stands in for `make()` and calls it on the first attribute asked of it."""
    return cast(T, _Deferred(make))
