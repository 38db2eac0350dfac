"""Mapping between the core's attrs records and table rows, by field name and field type.

Most fields are stored as they are (numbers, text, bytes), enums as their value, tuples of
names as space-separated text. A value the core keeps as a structure of its own and a table
keeps as JSON text (`TEXT_VALUES`) crosses here and nowhere else."""

from __future__ import annotations

import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs

from licore.model import UnlockData
from licore.protection import ProtectionSettings, parse_protection_settings, settings_document

T = TypeVar("T")
_UNIONS = (typing.Union, types.UnionType)


@functools.lru_cache(maxsize=4096)
def _settings(text: str) -> ProtectionSettings:
    # Every runtime call reads its product's row; the rules are the same few texts again
    # and again, and the value is frozen, so each text is parsed once.
    return parse_protection_settings(json.loads(text))


def _settings_text(settings: ProtectionSettings) -> str:
    return json.dumps(settings_document(settings), separators=(",", ":"), sort_keys=True)


# field type -> (to the column, from the column)
TEXT_VALUES: dict[Any, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    ProtectionSettings: (_settings_text, _settings),
    UnlockData: (lambda data: data.text, UnlockData),
}


def _same(v: Any) -> Any:
    return v


def _decoder(tp: Any) -> Callable[[Any], Any]:
    if tp in TEXT_VALUES:
        return TEXT_VALUES[tp][1]
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in _UNIONS:
        inner = _decoder(args[0])
        if inner is _same:
            return _same
        return lambda v: None if v is None else inner(v)
    if typing.get_origin(tp) is tuple:
        return lambda v: tuple(v.split(" ")) if v else ()
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp
    if tp is bool:
        return bool
    if tp is bytes:
        return bytes
    return _same


def _encoder(tp: Any) -> Callable[[Any], Any]:
    if tp in TEXT_VALUES:
        return TEXT_VALUES[tp][0]
    if typing.get_origin(tp) in _UNIONS:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        inner = _encoder(args[0])
        return lambda v: None if v is None else inner(v)
    if typing.get_origin(tp) is tuple:
        return lambda v: " ".join(v)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda v: v.value
    return lambda v: v


_Plan = tuple[tuple[str, ...], tuple[Callable[[Any], Any], ...], tuple[Callable[[Any], Any], ...],
              tuple[tuple[int, Callable[[Any], Any]], ...]]
_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> _Plan:
    attrs.resolve_types(cls)
    fields = attrs.fields(cls)
    decoders = tuple(_decoder(f.type) for f in fields)
    return (
        tuple(f.name for f in fields),
        decoders,
        tuple(_encoder(f.type) for f in fields),
        # only the columns whose value changes on the way in: most are taken as they come
        tuple((i, d) for i, d in enumerate(decoders) if d is not _same),
    )


def columns(cls: type) -> tuple[str, ...]:
    return _plan(cls)[0]


def column_list(cls: type, prefix: str = "") -> str:
    return ", ".join(prefix + c for c in columns(cls))


def to_row(record: Any) -> list[Any]:
    names, _, encoders, _ = _plan(type(record))
    return [enc(getattr(record, name)) for name, enc in zip(names, encoders, strict=True)]


def from_row(cls: type[T], row: Sequence[Any]) -> T:
    names, _, _, changed = _plan(cls)
    values = list(row[:len(names)])
    for i, decode in changed:
        if i < len(values):
            values[i] = decode(values[i])
    return cls(*values)
