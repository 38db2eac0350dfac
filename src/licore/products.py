"""Products: field rules (spec 2 and 8, contract 3), slugs, and visibility (spec 3)."""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Mapping

import attrs

from licore import validation as v
from licore.transitions import Go, Outcome, step

TITLE_MAX = 80
TAGLINE_MAX = 140
DESCRIPTION_MAX = 5000
PRICE_MAX = 1_000_000

CREATE_FIELDS = ("title", "tagline", "description", "price_credit")
CHANGE_FIELDS = ("id", *CREATE_FIELDS, "discoverable")


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


@attrs.frozen
class ProductFields:
    """The fields a create or change sets; `None` means "not sent, leave as it is"."""

    title: str | None = None
    tagline: str | None = None
    description: str | None = None
    price_credit: int | None = None
    discoverable: bool | None = None


def parse_create(body: object) -> ProductFields:
    """A create request. `discoverable` is not accepted here: a new product is a draft."""
    obj = v.require_object(body)
    # A create that sends `discoverable` is still a draft (spec 3), so the field is tolerated
    # and ignored rather than refused.
    v.refuse_unknown(obj, (*CREATE_FIELDS, "discoverable"))
    v.boolean(obj, "discoverable")
    return ProductFields(
        title=v.text(obj, "title", max_len=TITLE_MAX, required=True, min_len=1),
        tagline=v.text(obj, "tagline", max_len=TAGLINE_MAX),
        description=v.text(obj, "description", max_len=DESCRIPTION_MAX),
        price_credit=v.whole_number(obj, "price_credit", low=0, high=PRICE_MAX),
    )


def parse_change(body: Mapping[str, object]) -> ProductFields:
    v.refuse_unknown(body, CHANGE_FIELDS)
    return ProductFields(
        title=v.text(body, "title", max_len=TITLE_MAX, min_len=1),
        tagline=v.text(body, "tagline", max_len=TAGLINE_MAX),
        description=v.text(body, "description", max_len=DESCRIPTION_MAX),
        price_credit=v.whole_number(body, "price_credit", low=0, high=PRICE_MAX),
        discoverable=v.boolean(body, "discoverable"),
    )


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
