"""How a worker's C allocator hands memory back (docs/operators.md, "Memory after large
uploads").

glibc serves a large allocation (an upload's body, a build) with its own mapping, returned
to the system when freed, but after the first such free it raises that threshold (up to
32 MiB), so the next large buffers come from the heap, where a few live objects above them
keep the freed pages with the process. A fixed threshold keeps every buffer of 512 KiB or
more in its own mapping: a 30 MiB upload leaves no 30 MiB behind.

Why 512 KiB and not lower: asyncio reads a socket into a fresh 256 KiB buffer (its
`max_size`) and shrinks it to what arrived. At 128 KiB each of those reads was a mapping
made, faulted in, shrunk and unmapped: four system calls and a page fault on every request
(`strace -c` on a runtime call: 0.43 mmap, mremap and munmap a request, none in the
floor's process); above it, the buffer comes from the heap and its space is reused. The
heap is trimmed only past 1 MiB free at its top, so that space is not handed back and
asked for again on every read either.
"""

from __future__ import annotations

import ctypes
import ctypes.util

# mallopt's parameter numbers, from glibc's malloc.h
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
LARGE = 512 * 1024
TRIM = 2 * LARGE


def _glibc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") else None


_LIBC = _glibc()


def return_large_buffers() -> bool:
    """Fix glibc's thresholds for mapped allocations and for trimming the heap; False where
    the C library is not glibc (nothing to do there)."""
    if _LIBC is None:
        return False
    return bool(_LIBC.mallopt(_M_MMAP_THRESHOLD, LARGE)) and bool(
        _LIBC.mallopt(_M_TRIM_THRESHOLD, TRIM))

