"""Where a worker's buffers live once `licore_cli.memory` has set glibc's thresholds
(docs/operators.md, "Memory after large uploads"): a socket read's 256 KiB buffer comes from
the heap (a mapping of its own cost four system calls and a page fault a request), an
upload-sized buffer is a mapping of its own (freed, it goes back to the system), and a read
buffer freed at the heap's top stays for the next read instead of being trimmed off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = r"""
import json, sys
sys.path[:0] = sys.argv[1:]
from licore_cli.memory import return_large_buffers

def heap():
    for line in open("/proc/self/maps"):
        if line.rstrip().endswith("[heap]"):
            low, high = line.split()[0].split("-")
            return int(low, 16), int(high, 16)
    return 0, 0

def in_heap(obj):
    low, high = heap()
    return low <= id(obj) < high  # CPython: a bytes object is one block, id its address

set_ = return_large_buffers()
read_buffer = bytes(256 * 1024 + 64)  # what asyncio's recv asks for, and a little
upload = bytes(4 * 1024 * 1024)
read, top = in_heap(read_buffer), heap()[1]
del read_buffer  # freed at the heap's top: kept for the next read, not trimmed off
print(json.dumps({"set": set_, "read": read, "upload": in_heap(upload),
                  "kept": heap()[1] == top}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's thresholds: Linux")
def test_a_read_buffer_comes_from_the_heap_and_an_upload_is_its_own_mapping() -> None:
    import licore_cli.memory as memory

    if memory._LIBC is None:
        pytest.skip("not glibc: nothing is set")
    src = str(Path(memory.__file__).parents[1])
    out = subprocess.run([sys.executable, "-c", PROBE, src], capture_output=True, text=True,
                         check=True).stdout
    got = json.loads(out)
    assert got == {"set": True, "read": True, "upload": False, "kept": True}
