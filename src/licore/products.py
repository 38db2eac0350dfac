"""Products: slugs and visibility (spec 3, contract 3). The limits on their fields are in
`licore.bounds`, checked by the commands of `licore.commands`."""

from __future__ import annotations

import enum
import re
import unicodedata

from licore.transitions import Go, Outcome, step


class Visibility(enum.Enum):
    DRAFT = "draft"
    LISTED = "listed"


class VisibilityEvent(enum.Enum):
    LIST = "discoverable: true"
    UNLIST = "discoverable: false"


VISIBILITY: dict[tuple[Visibility, VisibilityEvent], Outcome[Visibility]] = {
    (Visibility.DRAFT, VisibilityEvent.LIST): Go(Visibility.LISTED),
    (Visibility.DRAFT, VisibilityEvent.UNLIST): Go(Visibility.DRAFT),
    (Visibility.LISTED, VisibilityEvent.UNLIST): Go(Visibility.DRAFT),
    (Visibility.LISTED, VisibilityEvent.LIST): Go(Visibility.LISTED),
}


def next_discoverable(current: bool, wanted: bool) -> bool:
    state = Visibility.LISTED if current else Visibility.DRAFT
    event = VisibilityEvent.LIST if wanted else VisibilityEvent.UNLIST
    return step(VISIBILITY, state, event).next is Visibility.LISTED


_SEPARATORS = re.compile(r"[\s_\-./]+")
_OTHER = re.compile(r"[^a-z0-9-]")
_HYPHENS = re.compile(r"-{2,}")


def slug_base(title: str) -> str:
    """Lower-case ASCII letters, digits and single hyphens; accents folded (contract 3)."""
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    # Separators become hyphens; other characters (apostrophes, symbols) are dropped, so
    # "Tom's Gun" gives "toms-gun".
    spaced = _SEPARATORS.sub("-", folded.lower())
    slug = _HYPHENS.sub("-", _OTHER.sub("", spaced)).strip("-")
    return slug or "product"


def slug_candidate(base: str, attempt: int) -> str:
    """`base`, then `base-2`, `base-3`, ... for de-duplication."""
    return base if attempt <= 1 else f"{base}-{attempt}"
