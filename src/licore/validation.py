"""Checks on JSON values as a client sent them, each naming the field it refuses.

JSON has no integer type of its own, so Python's parse gives `True` for `true` (a subclass of
int) and `5.0` for `5.0`: the checks here refuse both where the specification wants a whole
number. Lengths count Unicode code points, which is what `len` of a `str` counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from licore.errors import InvalidRequest


def require_object(body: object) -> Mapping[str, object]:
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    return body


def refuse_unknown(body: Mapping[str, object], allowed: Iterable[str]) -> None:
    known = set(allowed)
    for name in body:
        if name not in known:
            shown = name if len(name) <= 40 else name[:40] + "..."
            raise InvalidRequest(f"unknown field: {shown}", shown)


def text(body: Mapping[str, object], name: str, *, max_len: int, required: bool = False,
         min_len: int = 0) -> str | None:
    if name not in body:
        if required:
            raise InvalidRequest(f"{name} is required", name)
        return None
    value = body[name]
    if not isinstance(value, str):
        raise InvalidRequest(f"{name} must be a string", name)
    if len(value) > max_len:
        raise InvalidRequest(f"{name} must be at most {max_len} characters", name)
    if len(value) < min_len:
        raise InvalidRequest(
            f"{name} must not be empty" if min_len == 1 else
            f"{name} must be at least {min_len} characters", name)
    return value


def whole_number(body: Mapping[str, object], name: str, *, low: int, high: int,
                 required: bool = False) -> int | None:
    if name not in body:
        if required:
            raise InvalidRequest(f"{name} is required", name)
        return None
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(f"{name} must be a whole number (a JSON integer)", name)
    if not low <= value <= high:
        raise InvalidRequest(f"{name} must be between {low:,} and {high:,}", name)
    return value


def boolean(body: Mapping[str, object], name: str, *, required: bool = False) -> bool | None:
    if name not in body:
        if required:
            raise InvalidRequest(f"{name} is required", name)
        return None
    value = body[name]
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be true or false", name)
    return value


def identifier(body: Mapping[str, object], name: str) -> str:
    """A required id-like string (product_id, version_id, user ...)."""
    value = text(body, name, max_len=200, required=True, min_len=1)
    assert value is not None
    return value
