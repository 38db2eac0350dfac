"""The one decoder: request bodies and query strings become commands (`licore.commands`).

Every JSON body of every interface passes `parse_json`, so a rule about JSON text itself
(refusing lone surrogates or zero bytes, a nesting limit, duplicate keys) is written once,
there. `structure` then makes the command with one cattrs converter whose hooks are strict
the way contract 3 asks: a whole number is a JSON integer (not `true`, not `5.0`, not
`"5"`), a boolean is a JSON boolean. The command's own validators check the bounds. Any
refusal is `InvalidRequest` naming the field.

Two policies: `strict` (Partner API, device flow) refuses unknown fields and `null` where a
value is expected; `lenient` (Runtime API, whose failures all look alike anyway) ignores
unknown fields and reads `null` as "not sent", as a Luau client writing `nil` expects.
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar, Union

import attrs
import cattrs
from cattrs.errors import ClassValidationError

from licore.commands import JsonValue, NumberOrText, Paging
from licore.errors import InvalidRequest, LicoreError

T = TypeVar("T")


class Policy(enum.Enum):
    STRICT = "strict"
    LENIENT = "lenient"


STRICT, LENIENT = Policy.STRICT, Policy.LENIENT


def parse_json(raw: bytes | str) -> object:
    """JSON text to Python values: the one parser of every JSON body, and of JSON a person
    types into a form field."""
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequest("the body must be JSON") from None


class _WrongType(Exception):
    """A value of the wrong JSON type; the decoder adds the field's name."""

    def __init__(self, wanted: str) -> None:
        super().__init__(wanted)
        self.wanted = wanted


def _string(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise _WrongType("must be a string")
    return value


def _whole_number(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _WrongType("must be a whole number (a JSON integer)")
    return value


def _boolean(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise _WrongType("must be true or false")
    return value


def _number_or_text(value: object, _: type) -> NumberOrText:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _WrongType("must be a string or a number")
    return NumberOrText(str(value))


def _any_json(value: object, _: type) -> JsonValue:
    return value if isinstance(value, JsonValue) else JsonValue(value)


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(detailed_validation=True)
    converter.register_structure_hook(str, _string)
    converter.register_structure_hook(int, _whole_number)
    converter.register_structure_hook(bool, _boolean)
    converter.register_structure_hook(NumberOrText, _number_or_text)
    converter.register_structure_hook(JsonValue, _any_json)
    return converter


converter = _converter()


def _refusal(error: BaseException) -> LicoreError:
    """The first problem cattrs found, as the specification's error naming the field."""
    while isinstance(error, ClassValidationError) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, LicoreError):  # a command's own validator spoke
        return error
    notes = getattr(error, "__notes__", [])
    name = next((n.name for n in notes if hasattr(n, "name")), "body")
    if isinstance(error, KeyError):
        return InvalidRequest(f"{name} is required", name)
    if isinstance(error, _WrongType):
        return InvalidRequest(f"{name} {error.wanted}", name)
    return InvalidRequest(f"{name} is malformed", name)


def _shown(name: str) -> str:
    return name if len(name) <= 40 else name[:40] + "..."


_HINTS: dict[type, dict[str, Any]] = {}
_FIELDS: dict[type, frozenset[str]] = {}


def _hints(command: type) -> dict[str, Any]:
    # Resolving the string annotations cost more than the rest of decoding a runtime call;
    # a command class's hints never change, so each class is resolved once.
    hints = _HINTS.get(command)
    if hints is None:
        hints = _HINTS[command] = typing.get_type_hints(command)
    return hints


def _field_names(command: type) -> frozenset[str]:
    names = _FIELDS.get(command)
    if names is None:
        names = _FIELDS[command] = frozenset(
            f.name for f in attrs.fields(typing.cast(Any, command)))
    return names


def _allows(hint: Any, kind: type) -> bool:
    if hint is kind:
        return True
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return kind in typing.get_args(hint)
    return False


def structure(body: object, command: type[T], policy: Policy = STRICT,
              extra: tuple[str, ...] = ()) -> T:
    """A command from a parsed JSON body (or form). `extra` names fields that are
    tolerated and dropped (stock OAuth 2.0 clients' extras on the device flow)."""
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    hints = _hints(command)
    known = _field_names(command)
    fields: dict[str, object] = {}
    for name, value in body.items():
        if name not in known:
            if policy is STRICT and name not in extra:
                raise InvalidRequest(f"unknown field: {_shown(name)}", _shown(name))
            continue
        if _allows(hints[name], JsonValue):
            value = JsonValue(value)  # a seller's JSON: null is a value, not "not sent"
        elif value is None:
            if policy is LENIENT:
                continue  # null is "not sent"
            raise _refusal_of_null(name, hints[name])
        fields[name] = value
    try:
        return converter.structure(fields, command)
    except ClassValidationError as error:
        raise _refusal(error) from None
    except LicoreError:
        raise
    except (TypeError, ValueError) as error:
        raise _refusal(error) from None


def _refusal_of_null(name: str, hint: Any) -> InvalidRequest:
    for kind, hook in ((str, _string), (int, _whole_number), (bool, _boolean),
                       (NumberOrText, _number_or_text)):
        if _allows(hint, kind):
            try:
                hook(None, kind)
            except _WrongType as wrong:
                return InvalidRequest(f"{name} {wrong.wanted}", name)
    return InvalidRequest(f"{name} must not be null", name)


def from_query(query: Mapping[str, str], command: type[T], **given: object) -> T:
    """A command from a query string, and `given` fields from elsewhere (an upload's file).
    Parameters the command does not know are ignored (the specification names none that
    would change an answer); `limit` and `cursor` fill the command's `page`."""
    hints = _hints(command)
    fields: dict[str, object] = dict(given)
    for field in attrs.fields(typing.cast(Any, command)):
        hint = hints[field.name]
        if field.name in given:
            continue
        if hint is Paging:
            fields[field.name] = Paging(_whole(query, "limit"), query.get("cursor"))
        elif field.name in query:
            fields[field.name] = (_whole(query, field.name) if _allows(hint, int)
                                  else query[field.name])
        elif field.default is attrs.NOTHING:
            raise InvalidRequest(f"{field.name} is required", field.name)
    try:
        return command(**fields)
    except TypeError as error:  # a programming error, not a client's
        raise AssertionError(str(error)) from None


def _whole(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        raise InvalidRequest(f"{name} must be a whole number", name)
    return int(raw)
