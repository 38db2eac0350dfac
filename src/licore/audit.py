"""The audit trail's values (docs/audit.md): who acts (`Actor`), in which request, and what an
entry says changed. Pure values and the one rule of what a change may show; the recording
itself is `licore.services.audit`.

Who acts and the request id travel with the call (context variables), set once at each edge:
the Partner API's door sets the app and key, a web page the signed-in person, the command line
the operator, a purchase-pass claim the platform; nothing set is the service itself (a sweep,
a worker). So no use case passes them along, and every change a use case makes is told with
them."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import attrs


class ActorKind(enum.Enum):
    PERSON = "person"  # someone signed in on the web pages (their account id)
    APP = "app"  # an app through the Partner API (its client id, and the key's id)
    OPERATOR = "operator"  # the operator at the command line
    PLATFORM = "platform"  # the game platform, through a purchase-pass claim
    SERVICE = "service"  # licore itself: expiry, sweeps, workers


@attrs.frozen
class Actor:
    kind: ActorKind
    id: str
    key_id: str | None = None  # the API key an app acted with


SERVICE = Actor(ActorKind.SERVICE, "licore")

# The request being served (the HTTP edge's request id, as its `X-Request-ID` answer says),
# None outside one. Its one home: the HTTP adapter's logs read the same variable.
REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)
_ACTOR: ContextVar[Actor] = ContextVar("licore_actor", default=SERVICE)


def current_actor() -> Actor:
    return _ACTOR.get()


@contextmanager
def acting(actor: Actor) -> Iterator[None]:
    """Everything changed inside the block is told as `actor`'s doing."""
    token = _ACTOR.set(actor)
    try:
        yield
    finally:
        _ACTOR.reset(token)


# What a change shows: a JSON scalar, or a list of names (scopes, topics, permissions).
Value = str | int | bool | None | tuple[str, ...]


@attrs.frozen
class Change:
    """One field that changed. `shown` False: only its name is told (a secret, a digest,
    the seller's own unlock data), never either value."""

    field: str
    old: Value = None
    new: Value = None
    shown: bool = True


@attrs.frozen
class AuditEntry:
    id: str  # sorts by creation time
    studio_id: str | None  # None: not a studio's (an account, an app, for the operator)
    at: int
    actor: Actor
    request_id: str | None
    action: str  # `license.revoked`, `product.changed`, ...
    subject_type: str  # `license`, `product`, `api_key`, ...
    subject_id: str
    changes: tuple[Change, ...] = ()


def _value(value: Any) -> Value:
    if isinstance(value, enum.Enum):
        return _value(value.value)
    if isinstance(value, frozenset | set | tuple | list):
        return tuple(sorted(str(_value(v)) for v in value))
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


def changes(before: Any, after: Any, shown: frozenset[str],
            ignored: frozenset[str] = frozenset()) -> tuple[Change, ...]:
    """The fields of two attrs records of one type that differ (`before` None: a new record,
    every field told as set). Only the names in `shown` carry their values: a field a later
    change adds to a record is told by name alone until someone decides it may be shown, so
    a new secret can never slip into the trail."""
    record = after if after is not None else before
    out = []
    for field in attrs.fields(type(record)):
        if field.name in ignored:
            continue
        old = None if before is None else getattr(before, field.name)
        new = None if after is None else getattr(after, field.name)
        if old == new:
            continue
        if field.name in shown:
            out.append(Change(field.name, _value(old), _value(new)))
        else:
            out.append(Change(field.name, shown=False))
    return tuple(out)


def named(values: Mapping[str, tuple[Any, Any]]) -> tuple[Change, ...]:
    """Changes of values that are not fields of one record (a list of tiers, a flag)."""
    return tuple(Change(name, _value(old), _value(new))
                 for name, (old, new) in values.items() if old != new)


@attrs.frozen
class AuditFilter:
    """Which entries a reader asks for; None lets every entry through. `action` names an
    action (`license.revoked`) or its family (`license`); `actor` an actor's kind, id or key
    id; `subject` a subject's type or id; `since` and `until` (unix seconds) bound `at`,
    both inclusive."""

    action: str | None = None
    actor: str | None = None
    subject: str | None = None
    since: int | None = None
    until: int | None = None
