"""The same text `json.dumps` writes for a flat object (string keys; string, whole number,
finite float, boolean or null values), written without building an encoder.

`json.dumps` makes a new C encoder on every call; for the three-to-eight member objects
written on every request (the access line, a runtime answer) that set-up is most of the
cost. Anything else (a nested value, a non-string key, NaN) goes to `json.dumps` itself, so
the text is always what it would have written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

COMPACT = (",", ":")
SPACED = (", ", ": ")  # json.dumps's own default


def _scalar(value: object) -> str | None:
    # Exact types: a subclass (a bool, an IntEnum, a str subclass) may write differently.
    kind = type(value)
    if kind is str:
        return str(encode_basestring_ascii(value))  # type: ignore[arg-type]
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and kind is float and math.isfinite(value):
        return float.__repr__(value)
    return None


def dumps(obj: Mapping[str, Any], separators: tuple[str, str] = SPACED,
          default: Callable[[Any], Any] | None = None) -> str:
    """`json.dumps(obj, separators=separators, default=default)`, quickly when `obj` is
    flat."""
    item, key = separators
    parts = []
    for name, value in obj.items():
        text = _scalar(value)
        if text is None or type(name) is not str:
            return json.dumps(obj, separators=separators, default=default)
        parts.append(encode_basestring_ascii(name) + key + text)
    return "{" + item.join(parts) + "}"
