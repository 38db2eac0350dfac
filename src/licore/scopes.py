"""Scopes, the two key kinds, and what an approver may grant (spec section 5)."""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from licore.errors import InsufficientScope, InvalidRequest, InvalidScope


class KeyKind(enum.Enum):
    STUDIO = "studio"
    LIBRARY = "library"


class Permission(enum.Enum):
    MANAGE_PRODUCTS = "manage_products"
    MANAGE_LICENSES = "manage_licenses"


# Scope -> (key kind, studio permission the approver needs; None for a person's own scopes).
SCOPES: dict[str, tuple[KeyKind, Permission | None]] = {
    "packages:read": (KeyKind.STUDIO, Permission.MANAGE_PRODUCTS),
    "packages:write": (KeyKind.STUDIO, Permission.MANAGE_PRODUCTS),
    "products:read": (KeyKind.STUDIO, Permission.MANAGE_PRODUCTS),
    "products:write": (KeyKind.STUDIO, Permission.MANAGE_PRODUCTS),
    "licenses:read": (KeyKind.STUDIO, Permission.MANAGE_LICENSES),
    "licenses:write": (KeyKind.STUDIO, Permission.MANAGE_LICENSES),
    "library:read": (KeyKind.LIBRARY, None),
    "library:download": (KeyKind.LIBRARY, None),
}

# Plain words for the consent screen.
DESCRIPTIONS: dict[str, str] = {
    "packages:read": "See the studio's packages and versions",
    "packages:write": "Publish and update the studio's packages",
    "products:read": "See the studio's products",
    "products:write": "Create and edit the studio's products",
    "licenses:read": "See who owns the studio's products",
    "licenses:write": "Grant and revoke licenses to the studio's products",
    "library:read": "List the products you own and their versions",
    "library:download": "Download the products you own, any version",
}


def parse_scope_string(text: str, field: str = "scope") -> tuple[str, ...]:
    """Split a space-separated scope list, keeping first-seen order and dropping repeats."""
    parts = [p for p in text.split(" ") if p]
    if not parts:
        raise InvalidRequest(f"{field} must name at least one scope", field)
    return tuple(dict.fromkeys(parts))


def format_scopes(scopes: Iterable[str]) -> str:
    """Canonical order (the order of the specification's table), space-separated."""
    chosen = set(scopes)
    return " ".join(s for s in SCOPES if s in chosen)


def kind_of(scopes: Iterable[str]) -> KeyKind:
    """The one key kind a scope list belongs to; mixing the families is refused (rule 1)."""
    kinds = {SCOPES[s][0] for s in scopes if s in SCOPES}
    if len(kinds) != 1:
        raise InvalidScope(
            "scopes must be all studio scopes or all library scopes"
            if kinds
            else "no known scope requested"
        )
    return kinds.pop()


def requestable(requested: Iterable[str], registered: Iterable[str]) -> tuple[str, ...]:
    """What a client may ask for (rules 1 and 4).

    A list mixing the two families is refused. Scopes the client is not registered for (or
    that do not exist) are dropped, since the request may be a subset of the registration but
    never a superset; when nothing is left the request is `invalid_scope`.
    """
    requested = tuple(requested)
    if len({SCOPES[s][0] for s in requested if s in SCOPES}) > 1:
        raise InvalidScope("scopes must be all studio scopes or all library scopes")
    allowed = set(registered)
    survivors = tuple(s for s in requested if s in SCOPES and s in allowed)
    if not survivors:
        raise InvalidScope("none of the requested scopes is available to this client")
    return survivors


@attrs.frozen
class Grantable:
    """What one approver may grant: their studio permissions, or a person's own scopes."""

    permissions: frozenset[Permission]

    def filter(self, requested: Iterable[str]) -> tuple[str, ...]:
        """The requested scopes this approver may grant (rule 2)."""
        out = []
        for scope in requested:
            _, needed = SCOPES[scope]
            if needed is None or needed in self.permissions:
                out.append(scope)
        return tuple(out)


def require(granted: frozenset[str], kind: KeyKind, needed_kind: KeyKind, scope: str) -> None:
    """The scope check of every Partner API call: the right key kind and the scope itself."""
    if kind is not needed_kind:
        raise InsufficientScope(f"this call needs a {needed_kind.value} key", scope)
    if scope not in granted:
        raise InsufficientScope(f"this call needs the {scope} scope", scope)
