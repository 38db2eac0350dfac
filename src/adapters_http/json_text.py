"""`json.dumps`'s exact text, through a C encoder made once instead of on every call.

`json.dumps` builds a new C encoder (and a dict for spotting cycles) each time it is called;
for the small objects written on every request (the access line, a runtime answer) that
set-up is most of the cost. Here one encoder is kept per choice of separators and `default`.
It keeps no cycle bookkeeping, so it shares no state between threads; a cyclic value runs
into the recursion limit and is then handed to `json.dumps`, which reports it as it would.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

COMPACT = (",", ":")
SPACED = (", ", ": ")  # json.dumps's own default

Encoder = Callable[[Any, int], tuple[str, ...]]
# The C encoder json.dumps uses (absent from the type stubs; None without the accelerator).
_make: Any = getattr(json.encoder, "c_make_encoder", None)
_refuse = json.JSONEncoder().default  # json.dumps's own refusal of what it cannot write


@functools.cache
def _encoder(separators: tuple[str, str], default: Callable[[Any], Any] | None
             ) -> Encoder | None:
    if _make is None:  # a Python built without the json accelerator
        return None
    item, key = separators
    # The arguments of json.JSONEncoder.iterencode's one-shot call, with ensure_ascii and
    # allow_nan as json.dumps has them, and no markers (the cycle dict).
    encoder: Encoder = _make(None, default or _refuse, encode_basestring_ascii, None,
                                      key, item, False, False, True)
    return encoder


def dumps(obj: Any, separators: tuple[str, str] = SPACED,
          default: Callable[[Any], Any] | None = None) -> str:
    """`json.dumps(obj, separators=separators, default=default)`."""
    encode = _encoder(separators, default)
    if encode is None or isinstance(obj, str):
        return json.dumps(obj, separators=separators, default=default)
    try:
        return "".join(encode(obj, 0))
    except RecursionError:
        return json.dumps(obj, separators=separators, default=default)
