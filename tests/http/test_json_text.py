"""`json_text.dumps` writes exactly what `json.dumps` writes, and fails where it fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters_http import json_text

scalars = (st.text() | st.integers() | st.floats() | st.booleans() | st.none())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text() | st.integers(), inner, max_size=3),
                      max_leaves=12)
SEPARATORS = (json_text.COMPACT, json_text.SPACED)


@given(st.dictionaries(st.text(), scalars, max_size=8))
def test_a_flat_object_is_written_as_json_dumps_writes_it(obj: dict[str, Any]) -> None:
    for separators in SEPARATORS:
        assert json_text.dumps(obj, separators) == json.dumps(obj, separators=separators)


@given(values)
def test_any_value_is_written_as_json_dumps_writes_it(value: Any) -> None:
    for separators in SEPARATORS:
        assert json_text.dumps(value, separators, default=str) == json.dumps(
            value, separators=separators, default=str)
        assert json_text.dumps(value, separators) == json.dumps(value, separators=separators)


def test_a_value_json_cannot_write_goes_through_default() -> None:
    stamp = type("Stamp", (), {"__str__": lambda self: "then"})()
    obj: dict[str, object] = {"when": stamp}
    assert json_text.dumps(obj, default=str) == '{"when": "then"}'
    with pytest.raises(TypeError, match="Stamp is not JSON serializable"):
        json_text.dumps(obj)


def test_a_cycle_is_refused_as_json_dumps_refuses_it() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        json_text.dumps({"a": loop})
