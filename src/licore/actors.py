"""Who a use case acts for. An API key, a dashboard seat and a signed-in person all come down
to one of these: the use cases never see a key record, so the web pages call them as an app
would, without pretending to hold a key."""

from __future__ import annotations

import attrs


@attrs.frozen
class ActingStudio:
    """A studio: what a studio key, or a person's seat in the studio, acts as. Every query
    of a use case taking it is scoped to `studio_id` (spec 5)."""

    studio_id: str


@attrs.frozen
class ActingPerson:
    """A person: what a library key, or the signed-in person, acts as."""

    account_id: str
