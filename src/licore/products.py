"""Products: field rules (spec 2 and 8, contract 3), slugs, and visibility (spec 3)."""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Mapping

import attrs

from licore import validation as v
from licore.errors import NotFound
from licore.transitions import Event, Fail, Go, Table, step, table

TITLE_MAX = 80
TAGLINE_MAX = 140
DESCRIPTION_MAX = 5000
PRICE_MAX = 1_000_000

CREATE_FIELDS = ("title", "tagline", "description", "price_credit")
CHANGE_FIELDS = ("id", *CREATE_FIELDS, "discoverable")


class Visibility(enum.Enum):
    NONE = "none"  # no product of the key's studio with that id (never stored)
    DRAFT = "draft"
    LISTED = "listed"


class VisibilityEvent(Event):
    CREATE = ("`POST /products` without `id`", "`title` present", True)
    # Whether the product is the key's studio's is the state: "none" when it is not.
    LIST = ("`POST /products` with `id` and `discoverable: true`",)
    UNLIST = ("`POST /products` with `id` and `discoverable: false`",)
    EDIT = ("`POST /products` with `id`, without `discoverable`",)


class ProductEffect(enum.Enum):
    """What the caller does with a row, in the same transaction (`services.partner`)."""

    GENERATE_SLUG = ("A slug is generated. A product created through the API is always a "
                     "draft, even when `discoverable` is sent")


def _not_found() -> NotFound:
    return NotFound("no such product")


V, VE = Visibility, VisibilityEvent

# A change of a product that is not the key's studio's is `not_found` (spec 4.2), whatever
# it sends. Listing a product is not checked for a build here: the specification leaves that
# to the seller's workflow.
VISIBILITY: Table[Visibility, VisibilityEvent, ProductEffect] = table(
    (V.NONE,   VE.CREATE, Go(V.DRAFT, (ProductEffect.GENERATE_SLUG,))),
    (V.NONE,   VE.LIST,   Fail(_not_found)),
    (V.NONE,   VE.UNLIST, Fail(_not_found)),
    (V.NONE,   VE.EDIT,   Fail(_not_found)),

    (V.DRAFT,  VE.LIST,   Go(V.LISTED)),
    (V.DRAFT,  VE.UNLIST, Go(V.DRAFT)),
    (V.DRAFT,  VE.EDIT,   Go(V.DRAFT)),

    (V.LISTED, VE.UNLIST, Go(V.DRAFT)),
    (V.LISTED, VE.LIST,   Go(V.LISTED)),
    (V.LISTED, VE.EDIT,   Go(V.LISTED)),
)


def transition(state: Visibility, event: VisibilityEvent) -> Go[Visibility, ProductEffect]:
    return step(VISIBILITY, state, event)


def visibility(discoverable: bool) -> Visibility:
    return Visibility.LISTED if discoverable else Visibility.DRAFT


def change_event(discoverable: bool | None) -> VisibilityEvent:
    """The event of a change by the `discoverable` it sends (or not)."""
    if discoverable is None:
        return VisibilityEvent.EDIT
    return VisibilityEvent.LIST if discoverable else VisibilityEvent.UNLIST


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
