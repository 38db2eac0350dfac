"""`flat_json.dumps` writes exactly what `json.dumps` writes, for any object, flat or not."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters_http import flat_json

scalars = (st.text() | st.integers() | st.floats() | st.booleans() | st.none())
values = scalars | st.lists(scalars, max_size=3) | st.dictionaries(st.text(), scalars, max_size=3)
keys = st.text() | st.integers()


@given(st.dictionaries(st.text(), scalars, max_size=8))
def test_a_flat_object_is_written_as_json_dumps_writes_it(obj: dict[str, Any]) -> None:
    for separators in (flat_json.COMPACT, flat_json.SPACED):
        assert flat_json.dumps(obj, separators) == json.dumps(obj, separators=separators)


@given(st.dictionaries(keys, values, max_size=6))
def test_anything_else_is_handed_to_json_dumps(obj: dict[Any, Any]) -> None:
    for separators in (flat_json.COMPACT, flat_json.SPACED):
        assert flat_json.dumps(obj, separators, default=str) == json.dumps(
            obj, separators=separators, default=str)


def test_a_value_json_cannot_write_goes_through_default() -> None:
    stamp = type("Stamp", (), {"__str__": lambda self: "then"})()
    obj: dict[str, object] = {"when": stamp}
    assert flat_json.dumps(obj, default=str) == '{"when": "then"}'
