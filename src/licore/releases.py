"""Release channels and withdrawn builds (issue 32, docs/api.md "Release channels").

A version is published to `stable` (the specification's live version) or to `beta`; a
seller may withdraw a published version. The product keeps one pointer per channel:
`current_version_id` (stable, the live build) and `beta_version_id`. A beta pointer, when
set, always names a build published after the live one: publishing to stable empties it,
so "the newest of beta and stable" is simply the beta build when there is one.

A caller that never names a channel is answered from stable exactly as the specification
says; one that names `beta` gets the beta build only when the license's owner opted in to
beta for the product (their own choice, kept on their license), otherwise stable."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import attrs

from licore.errors import InvalidRequest
from licore.transitions import Event, Fail, Go, Table, step, table

if TYPE_CHECKING:
    from licore.model import License, Product, Version


class Channel(enum.Enum):
    STABLE = "stable"
    BETA = "beta"


CHANNELS = tuple(c.value for c in Channel)


class Release(enum.Enum):
    """A version's standing, read from its record (`standing`)."""

    DRAFT = "draft"  # uploaded, never published
    BETA = "beta"
    STABLE = "stable"
    WITHDRAWN = "withdrawn"


class ReleaseEvent(Event):
    PUBLISH_STABLE = ("Publish", "to `stable`")
    PUBLISH_BETA = ("Publish", "to `beta`")
    WITHDRAW = ("Withdraw",)


class ReleaseEffect(enum.Enum):
    """What the caller does with a row, in the same transaction (`services.packages`)."""

    GO_LIVE = ("The version becomes the live version; the beta channel is emptied (a stable "
               "release is newer than any beta before it)")
    GO_BETA = "The version becomes the beta channel's build"
    FALL_BACK = ("If it was live, the newest remaining stable version becomes live (none "
                 "left: no live version); if it was the beta build, the beta channel is "
                 "emptied (beta callers get stable)")
    TELL_PUBLISHED = "Event `version.published`"
    TELL_WITHDRAWN = "Event `version.withdrawn`"


def _stable_to_beta() -> InvalidRequest:
    return InvalidRequest("this version was released on stable; beta takes builds that are "
                          "newer than stable (upload a new version)", "channel")


def _withdrawn() -> InvalidRequest:
    return InvalidRequest("this version was withdrawn; a withdrawn build is never published "
                          "again (upload a new version)", "version_id")


def _draft() -> InvalidRequest:
    return InvalidRequest("this version was never published; only a published version can "
                          "be withdrawn", "version_id")


R, RE, FX = Release, ReleaseEvent, ReleaseEffect

RELEASES: Table[Release, ReleaseEvent, ReleaseEffect] = table(
    (R.DRAFT,     RE.PUBLISH_STABLE, Go(R.STABLE, (FX.GO_LIVE, FX.TELL_PUBLISHED))),
    (R.DRAFT,     RE.PUBLISH_BETA,   Go(R.BETA, (FX.GO_BETA, FX.TELL_PUBLISHED))),
    (R.DRAFT,     RE.WITHDRAW,       Fail(_draft)),

    (R.BETA,      RE.PUBLISH_STABLE, Go(R.STABLE, (FX.GO_LIVE, FX.TELL_PUBLISHED))),
    (R.BETA,      RE.PUBLISH_BETA,   Go(R.BETA, (FX.GO_BETA, FX.TELL_PUBLISHED))),
    (R.BETA,      RE.WITHDRAW,       Go(R.WITHDRAWN, (FX.FALL_BACK, FX.TELL_WITHDRAWN))),

    # Publishing a stable version again is the specification's roll back: it goes live.
    (R.STABLE,    RE.PUBLISH_STABLE, Go(R.STABLE, (FX.GO_LIVE, FX.TELL_PUBLISHED))),
    (R.STABLE,    RE.PUBLISH_BETA,   Fail(_stable_to_beta)),
    (R.STABLE,    RE.WITHDRAW,       Go(R.WITHDRAWN, (FX.FALL_BACK, FX.TELL_WITHDRAWN))),

    (R.WITHDRAWN, RE.PUBLISH_STABLE, Fail(_withdrawn)),
    (R.WITHDRAWN, RE.PUBLISH_BETA,   Fail(_withdrawn)),
    # A repeated withdraw (a retry) changes nothing and tells nothing.
    (R.WITHDRAWN, RE.WITHDRAW,       Go(R.WITHDRAWN)),
)


def standing(version: Version) -> Release:
    if version.withdrawn_at is not None:
        return Release.WITHDRAWN
    if not version.published:
        return Release.DRAFT
    return Release.BETA if version.channel is Channel.BETA else Release.STABLE


def publish_event(channel: Channel) -> ReleaseEvent:
    return ReleaseEvent.PUBLISH_BETA if channel is Channel.BETA else ReleaseEvent.PUBLISH_STABLE


def transition(version: Version, event: ReleaseEvent) -> Go[Release, ReleaseEffect]:
    return step(RELEASES, standing(version), event)


def go_live(product: Product, version: Version) -> Product:
    return attrs.evolve(product, current_version_id=version.id, current_version=version.label,
                        beta_version_id=None, beta_version=None)


def go_beta(product: Product, version: Version) -> Product:
    return attrs.evolve(product, beta_version_id=version.id, beta_version=version.label)


def fall_back(product: Product, withdrawn: Version, newest_stable: Version | None) -> Product:
    """The product once `withdrawn` is gone: `newest_stable` is the newest stable version
    left (published, not withdrawn), which becomes live if the withdrawn one was."""
    if product.current_version_id == withdrawn.id:
        product = attrs.evolve(
            product, current_version_id=newest_stable.id if newest_stable else None,
            current_version=newest_stable.label if newest_stable else None)
    if product.beta_version_id == withdrawn.id:
        product = attrs.evolve(product, beta_version_id=None, beta_version=None)
    return product


@attrs.frozen
class Offer:
    """The build a runtime caller is offered: its id and label (both None: none)."""

    version_id: str | None
    label: str | None


def offered(product: Product, license: License | None, asked: Channel | None) -> Offer:
    """What `/version` and `/update` offer: the beta build to a caller that asked for beta
    for a license whose owner opted in, while there is one; the live build otherwise
    (always, to a caller that names no channel)."""
    if (asked is Channel.BETA and license is not None and license.channel is Channel.BETA
            and product.beta_version_id is not None):
        return Offer(product.beta_version_id, product.beta_version)
    return Offer(product.current_version_id, product.current_version)


def may_download(version: Version, follows: Channel) -> bool:
    """A buyer may download a published, not withdrawn version; a beta one only while they
    follow beta."""
    return (version.published and version.withdrawn_at is None
            and (version.channel is Channel.STABLE or follows is Channel.BETA))
