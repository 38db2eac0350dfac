"""The one decoder: request bodies and query strings become commands (`licore.commands`).

Every JSON body of every interface passes `parse_json`, so a rule about JSON text itself
(refusing lone surrogates or zero bytes, a nesting limit, duplicate keys) is written once,
there. `structure` then makes the command with one cattrs converter whose hooks are strict
the way contract 3 asks: a whole number is a JSON integer (not `true`, not `5.0`, not
`"5"`), a boolean is a JSON boolean. The command's own validators check the bounds. Any
refusal is `InvalidRequest` naming the field.

Three policies: `strict` (Partner API) refuses unknown fields and `null` where a value is
expected; `oauth` (device flow) is as strict about the fields it knows but ignores the
others, as RFC 6749 section 3.2 asks of an authorization server; `lenient` (Runtime API,
whose failures all look alike anyway) ignores unknown fields and reads `null` as "not sent",
as a Luau client writing `nil` expects.

What `parse_json` refuses, each with `400 invalid_request` (docs/operators.md, "What is
bounded"): text that is not UTF-8 JSON; nesting deeper than `MAX_DEPTH`; a string (or an
object key) holding a lone surrogate (valid JSON, not valid Unicode: it would fail later,
when written to the database or encoded again) or a zero byte (PostgreSQL cannot store it);
a string longer than the caller's bound; an integer beyond 64 bits, a number literal longer
than `MAX_NUMBER_CHARS`, `NaN` and the infinities; an object naming a key twice.
"""

from __future__ import annotations

import enum
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, Union

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, list_structure_factory
from cattrs.errors import BaseValidationError, ClassValidationError, ForbiddenExtraKeysError

from licore.commands import JsonValue, NumberOrText, Paging
from licore.errors import InvalidRequest, LicoreError, printable

T = TypeVar("T")


class Policy(enum.Enum):
    STRICT = "strict"
    OAUTH = "oauth"
    LENIENT = "lenient"


STRICT, OAUTH, LENIENT = Policy.STRICT, Policy.OAUTH, Policy.LENIENT

MAX_DEPTH = 64  # arrays and objects inside each other; the deepest real body is about 8
MAX_STRING = 64 * 1024  # code points in one string, unless the endpoint says otherwise
MAX_NUMBER_CHARS = 64  # characters of one number literal
_INT_BOUND = 1 << 63  # integers are 64-bit signed, what both databases store

# A JSON string (the unrolled form: linear, no backtracking), what is not a bracket, and an
# innermost pair of brackets.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _nesting_refusal(text: str) -> InvalidRequest | None:
    """A refusal when `text` nests deeper than `MAX_DEPTH`, found without recursion. Only
    the brackets outside strings count (a bracket inside a string is no nesting). Passes
    that each remove the innermost pairs (C speed) shrink a wide body to little; what is
    left is walked, stopping at the first level too deep. On text that is not JSON the count
    may be off, but only over a part that `json.loads` refuses anyway."""
    if text.count("{") + text.count("[") <= MAX_DEPTH:
        return None  # no deeper than its opening brackets: every runtime body ends here
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    removed = 0
    while len(brackets) > 2 * MAX_DEPTH and removed < MAX_DEPTH:
        shorter = _INNERMOST.sub("", brackets)
        if len(shorter) > 3 * len(brackets) // 4:
            break  # deep rather than wide: the walk below stops early
        brackets, removed = shorter, removed + 1
    depth = removed
    for bracket in brackets:
        depth += _STEP[bracket]
        if depth > MAX_DEPTH:
            return InvalidRequest(f"the body is nested more than {MAX_DEPTH} levels deep")
    return None


def text_problem(value: str) -> str | None:
    """Why a string cannot be taken as text, or None: a zero byte, or a lone surrogate."""
    if "\x00" in value:
        return "must not contain a zero byte"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "must be valid Unicode (it holds a lone surrogate)"
    return None


def check_text(name: str, value: str) -> str:
    """`value` if it is acceptable text; a refusal naming `name` otherwise. Query strings,
    form fields and paths pass here too."""
    problem = text_problem(value)
    if problem is not None:
        raise InvalidRequest(f"{_shown(name)} {problem}", _shown(name))
    return value


def _int(literal: str) -> int:
    if len(literal) > MAX_NUMBER_CHARS:
        raise InvalidRequest("a number in the body is too long")
    value = int(literal)
    if not -_INT_BOUND <= value < _INT_BOUND:
        raise InvalidRequest("a whole number in the body is out of range (64-bit)")
    return value


def _float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise InvalidRequest("a number in the body is too long")
    value = float(literal)
    if not math.isfinite(value):
        raise InvalidRequest("a number in the body is out of range")
    return value


def _constant(literal: str) -> object:
    raise InvalidRequest(f"{literal} is not a JSON number")


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        check_text("a key", key)  # before the key is quoted in a refusal
        if key in found:
            raise InvalidRequest(f"duplicate key: {_shown(key)}", _shown(key))
        found[key] = value
    return found


# Made once: `json.loads` with hooks builds a new decoder on every call, which cost as much
# as parsing a runtime call's body. A decoder keeps nothing of one text for the next.
_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_int, parse_float=_float,
                            parse_constant=_constant)


def _check_strings(value: object, max_string: int) -> None:
    """Every string and key of a parsed value, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > max_string:
                raise InvalidRequest(f"a string in the body is longer than {max_string:,} "
                                     f"characters")
            check_text("a string in the body", item)
        elif isinstance(item, dict):
            stack.extend(item.values())  # keys were checked while parsing
        elif isinstance(item, list):
            stack.extend(item)


def parse_json(raw: bytes | str, *, max_string: int = MAX_STRING) -> object:
    """JSON text to Python values: the one parser of every JSON body, and of JSON a person
    types into a form field. Raises `InvalidRequest` and nothing else."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise InvalidRequest("the body must be JSON in UTF-8") from None
    refusal = _nesting_refusal(text)
    if refusal is not None:
        raise refusal
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):  # RecursionError: the depth count is the guard
        raise InvalidRequest("the body must be JSON") from None
    _check_strings(value, max_string)
    return value


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


def _homogeneous_tuple(hint: Any) -> bool:
    args = typing.get_args(hint)
    return typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis


def _list(hint: Any) -> bool:
    return typing.get_origin(hint) is list


def _only_lists(factory: Callable[[Any, cattrs.Converter], Callable[[Any, Any], Any]]
                ) -> Callable[[Any, cattrs.Converter], Callable[[Any, Any], Any]]:
    """cattrs' own hook for a sequence type, taking a JSON array only: cattrs iterates
    whatever it is given, so `""` or `{}` was an empty list (and a string a list of its
    characters), and a seller's tiers, image order or roles were replaced by nothing."""
    def make(hint: Any, conv: cattrs.Converter) -> Callable[[Any, Any], Any]:
        inner = factory(hint, conv)

        def hook(value: object, kind: Any) -> Any:
            if not isinstance(value, list):
                raise _WrongType("must be a list (a JSON array)")
            return inner(value, kind)
        return hook
    return make


def _converter() -> cattrs.Converter:
    # Unknown keys are refused inside items too (a tier's, a role's), as at the top level.
    converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook_factory(
        _homogeneous_tuple, _only_lists(homogenous_tuple_structure_factory))
    converter.register_structure_hook_factory(_list, _only_lists(list_structure_factory))
    converter.register_structure_hook(str, _string)
    converter.register_structure_hook(int, _whole_number)
    converter.register_structure_hook(bool, _boolean)
    converter.register_structure_hook(NumberOrText, _number_or_text)
    converter.register_structure_hook(JsonValue, _any_json)
    return converter


# The HTTP edge's one converter, both ways: requests are structured into commands through
# the strict hooks above, answers unstructured from values by `responses.JSONResponse`.
converter = _converter()


def _named(error: BaseException) -> str:
    """The field a cattrs error's notes name, or ""."""
    return next((n.name for n in getattr(error, "__notes__", []) if hasattr(n, "name")), "")


def _refusal(error: BaseException) -> LicoreError:
    """The first problem cattrs found, as the specification's error naming the field (the
    outermost: `tiers`, not the tier's own `name`)."""
    name = ""
    while isinstance(error, BaseValidationError) and error.exceptions:
        error = error.exceptions[0]
        name = name or _named(error)
    if isinstance(error, LicoreError):  # a command's own validator spoke
        return error
    name = name or _named(error) or "body"
    if isinstance(error, ForbiddenExtraKeysError):
        extra = _shown(sorted(error.extra_fields)[0])
        return InvalidRequest(f"unknown field in {name}: {extra}", name)
    if isinstance(error, KeyError):
        return InvalidRequest(f"{name} is required", name)
    if isinstance(error, _WrongType):
        return InvalidRequest(f"{name} {error.wanted}", name)
    return InvalidRequest(f"{name} is malformed", name)


def _shown(name: str) -> str:
    """A client's name for a field, fit to quote in a refusal: short, and in the characters
    an `error_description` allows (`licore.errors.printable`)."""
    return printable(name if len(name) <= 40 else name[:40] + "...")


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


_JSON_FIELDS: dict[type, frozenset[str]] = {}


def _json_fields(command: type) -> frozenset[str]:
    """The fields that hold a seller's JSON as it came (`JsonValue`)."""
    names = _JSON_FIELDS.get(command)
    if names is None:
        hints = _hints(command)
        names = _JSON_FIELDS[command] = frozenset(
            name for name in _field_names(command) if _allows(hints[name], JsonValue))
    return names


def _allows(hint: Any, kind: type) -> bool:
    if hint is kind:
        return True
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return kind in typing.get_args(hint)
    return False


def structure(body: object, command: type[T], policy: Policy = STRICT) -> T:
    """A command from a parsed JSON body (or form)."""
    if not isinstance(body, dict):
        raise InvalidRequest("the body must be a JSON object")
    hints = _hints(command)
    known = _field_names(command)
    seller_json = _json_fields(command)
    fields: dict[str, object] = {}
    for name, value in body.items():
        if name not in known:
            if policy is STRICT:
                raise InvalidRequest(f"unknown field: {_shown(name)}", _shown(name))
            continue
        if name in seller_json:
            value = JsonValue(value)  # a seller's JSON: null is a value, not "not sent"
        elif value is None:
            if policy is LENIENT:
                continue  # null is "not sent"
            if name not in _nullable(command):
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


_NULLABLE: dict[type, frozenset[str]] = {}


def _nullable(command: type) -> frozenset[str]:
    """The fields that must be sent and may be null: null is their value ("clear it"),
    not "not sent", which is what null means in an optional field the strict policy
    refuses."""
    names = _NULLABLE.get(command)
    if names is None:
        hints = _hints(command)
        names = _NULLABLE[command] = frozenset(
            f.name for f in attrs.fields(typing.cast(Any, command))
            if f.default is attrs.NOTHING and _allows(hints[f.name], type(None)))
    return names


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
            cursor = query.get("cursor")
            fields[field.name] = Paging(_whole(query, "limit"),
                                        None if cursor is None else check_text("cursor", cursor))
        elif field.name in query:
            fields[field.name] = (_whole(query, field.name) if _allows(hint, int)
                                  else check_text(field.name, query[field.name]))
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
