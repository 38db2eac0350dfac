"""Products: slugs and visibility (spec 3, contract 3). The limits on their fields are in
`licore.bounds`, checked by the commands of `licore.commands`."""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from licore.errors import NotFound
from licore.transitions import Event, Fail, Go, Table, step, table

if TYPE_CHECKING:
    from licore.model import Product


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
    """What the caller does with a row, in the same transaction (`services.products`)."""

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


def unique_slug(base: str, product_id: str) -> str:
    """The last resort when the numbered twin is taken by another title's slug: the
    product id's random tail, in a slug's alphabet."""
    return f"{base}-{product_id[-10:].lower()}"


# The store's orders (commands.BrowseStore.sort): each a key over (product, studio name).
_STORE_ORDERS: dict[str, tuple[Callable[[Product, str], Any], bool]] = {
    "title": (lambda p, s: (_folded(p.title), p.id), False),
    "newest": (lambda p, s: (p.created_at, p.id), True),
    "price": (lambda p, s: (p.price_credit, _folded(p.title), p.id), False),
    "price_desc": (lambda p, s: (p.price_credit, p.created_at, p.id), True),
}


def _folded(text: str) -> str:
    """Text compared as a person reads it: case and accents aside."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def browse(listed: Iterable[tuple[Product, str]], q: str,
           sort: str) -> list[tuple[Product, str]]:
    """The listed products (with their studio's name) that hold every word of `q` in their
    title, tagline or studio name, in the order `sort` names."""
    words = _folded(q).split()
    found = [(p, s) for p, s in listed
             if all(w in _folded(f"{p.title} {p.tagline} {s}") for w in words)]
    key, newest_first = _STORE_ORDERS[sort]
    return sorted(found, key=lambda pair: key(*pair), reverse=newest_first)
