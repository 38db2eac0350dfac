"""How a worker's C allocator hands memory back (docs/operators.md, "Memory after large
uploads").

glibc serves a large allocation (an upload's body, a build) with its own mapping, returned
to the system when freed, but after the first such free it raises that threshold (up to
32 MiB), so the next large buffers come from the heap, where a few live objects above them
keep the freed pages with the process. A fixed threshold keeps every buffer of 128 KiB or
more in its own mapping: a 30 MiB upload leaves no 30 MiB behind.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's malloc.h
LARGE = 128 * 1024


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") else None


_LIBC = _glibc()


def return_large_buffers() -> bool:
    """Fix glibc's threshold for mapped allocations; False where the C library is not glibc
    (nothing to do there)."""
    return _LIBC is not None and bool(_LIBC.mallopt(_M_MMAP_THRESHOLD, LARGE))

