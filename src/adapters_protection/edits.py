"""Replacing byte ranges of a script in one pass."""

from __future__ import annotations

from collections.abc import Iterable

Edit = tuple[int, int, bytes]  # start byte, end byte, replacement


def apply(data: bytes, edits: Iterable[Edit]) -> bytes:
    """`data` with every (non-overlapping) range replaced."""
    out: list[bytes] = []
    pos = 0
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < pos:
            raise ValueError(f"overlapping edits at byte {start}")
        out += [data[pos:start], replacement]
        pos = end
    out.append(data[pos:])
    return b"".join(out)


def prelude_offset(data: bytes) -> int:
    """Where generated declarations go: after a `#!` line and leading `--!` directives,
    which Luau only honours at the very top."""
    pos = 0
    if data.startswith(b"#!"):
        pos = data.find(b"\n") + 1 or len(data)
    while True:
        rest = data[pos:]
        stripped = rest.lstrip()
        if not stripped.startswith(b"--!"):
            return pos
        start = pos + len(rest) - len(stripped)
        end = data.find(b"\n", start)
        if end < 0:
            return len(data)
        pos = end + 1
