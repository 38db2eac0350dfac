"""The pure rules of release channels (licore.releases): which build is live, which is the
beta build, and which one a runtime caller is offered, after each publish and withdraw."""

from __future__ import annotations

import attrs
import pytest

from licore import releases
from licore.errors import InvalidRequest
from licore.licenses import LicenseState, Source
from licore.model import License, Product, Version
from licore.releases import Channel, Offer, Release, ReleaseEvent

PRODUCT = Product(id="prd_1", studio_id="std_1", slug="gun", title="Gun", tagline="",
                  description="", price_credit=0, discoverable=False, licensing_enabled=True,
                  created_at=0, updated_at=0)


def version(label: str, at: int, *, published: bool = True, channel: Channel = Channel.STABLE,
            withdrawn: bool = False) -> Version:
    return Version(id=f"ver_{label}", product_id=PRODUCT.id, label=label, format="binary",
                   size_bytes=1, sha256="", blob_id=f"blb_{label}", published=published,
                   created_at=at, channel=channel, withdrawn_at=99 if withdrawn else None)


def holder(channel: Channel) -> License:
    return License(id="lic_1", product_id=PRODUCT.id, platform_id="1", source=Source.GRANT,
                   state=LicenseState.ACTIVE, verified_at=0, created_at=0, channel=channel)


V1, V2 = version("1.0", 1), version("2.0", 2)
B3 = version("3.0-beta", 3, channel=Channel.BETA)


def live(p: Product) -> str | None:
    return p.current_version


@pytest.mark.parametrize(("record", "standing"), [
    (version("d", 1, published=False), Release.DRAFT),
    (V1, Release.STABLE),
    (B3, Release.BETA),
    (version("w", 1, withdrawn=True), Release.WITHDRAWN),
    (version("wb", 1, channel=Channel.BETA, withdrawn=True), Release.WITHDRAWN),
])
def test_a_versions_standing_is_read_from_its_record(record: Version,
                                                     standing: Release) -> None:
    assert releases.standing(record) is standing


def test_publishing_to_stable_goes_live_and_empties_the_beta_channel() -> None:
    with_beta = releases.go_beta(releases.go_live(PRODUCT, V1), B3)
    assert (with_beta.current_version, with_beta.beta_version) == ("1.0", "3.0-beta")
    promoted = releases.go_live(with_beta, B3)
    assert (promoted.current_version_id, promoted.beta_version_id) == (B3.id, None)


# (live before, beta before, withdrawn, newest stable left) -> (live after, beta after)
FALL_BACK = [
    # the live build goes: the newest stable version left goes live
    (V2, None, V2, V1, "1.0", None),
    # the only stable build goes: no live version, as before anything was published
    (V1, None, V1, None, None, None),
    # the beta build goes: beta callers get stable again
    (V1, B3, B3, V1, "1.0", None),
    # an older build goes: nothing moves
    (V2, B3, V1, V2, "2.0", "3.0-beta"),
    # the live build goes while a beta stands: the beta stays (it is newer still)
    (V2, B3, V2, V1, "1.0", "3.0-beta"),
]


@pytest.mark.parametrize(("was_live", "was_beta", "gone", "left", "now_live", "now_beta"),
                         FALL_BACK)
def test_withdrawing_falls_back(was_live: Version, was_beta: Version | None, gone: Version,
                                left: Version | None, now_live: str | None,
                                now_beta: str | None) -> None:
    before = releases.go_live(PRODUCT, was_live)
    if was_beta is not None:
        before = releases.go_beta(before, was_beta)
    after = releases.fall_back(before, attrs.evolve(gone, withdrawn_at=5), left)
    assert (after.current_version, after.beta_version) == (now_live, now_beta)
    assert after.current_version_id == (f"ver_{now_live}" if now_live else None)
    assert after.beta_version_id == (f"ver_{now_beta}" if now_beta else None)


# (caller's license channel, channel asked for, beta build?) -> label offered
OFFERS = [
    (Channel.STABLE, None, True, "1.0"),  # the specification's caller: always stable
    (Channel.BETA, None, True, "1.0"),  # opted in, but the call names no channel
    (Channel.STABLE, Channel.BETA, True, "1.0"),  # the game asks, the owner did not opt in
    (Channel.BETA, Channel.BETA, True, "3.0-beta"),
    (Channel.BETA, Channel.BETA, False, "1.0"),  # no beta build: beta includes stable
    (Channel.BETA, Channel.STABLE, True, "1.0"),
]


@pytest.mark.parametrize(("follows", "asked", "has_beta", "label"), OFFERS)
def test_what_a_runtime_caller_is_offered(follows: Channel, asked: Channel | None,
                                          has_beta: bool, label: str) -> None:
    product = releases.go_live(PRODUCT, V1)
    if has_beta:
        product = releases.go_beta(product, B3)
    offer = releases.offered(product, holder(follows), asked)
    assert offer.label == label
    assert offer.version_id == ("ver_" + label)


def test_nothing_is_offered_before_anything_is_published() -> None:
    assert releases.offered(PRODUCT, holder(Channel.BETA), Channel.BETA) == Offer(None, None)


@pytest.mark.parametrize(("record", "follows", "allowed"), [
    (V1, Channel.STABLE, True),
    (B3, Channel.STABLE, False),
    (B3, Channel.BETA, True),
    (version("d", 1, published=False), Channel.BETA, False),
    (version("w", 1, withdrawn=True), Channel.BETA, False),
])
def test_who_may_download_which_build(record: Version, follows: Channel,
                                      allowed: bool) -> None:
    assert releases.may_download(record, follows) is allowed


@pytest.mark.parametrize(("record", "event"), [
    (version("w", 1, withdrawn=True), ReleaseEvent.PUBLISH_STABLE),
    (version("w", 1, withdrawn=True), ReleaseEvent.PUBLISH_BETA),
    (V1, ReleaseEvent.PUBLISH_BETA),
    (version("d", 1, published=False), ReleaseEvent.WITHDRAW),
])
def test_refused_moves_are_invalid_requests(record: Version, event: ReleaseEvent) -> None:
    with pytest.raises(InvalidRequest):
        releases.transition(record, event)


def test_withdrawing_twice_changes_nothing_and_tells_nothing() -> None:
    again = releases.transition(version("w", 1, withdrawn=True), ReleaseEvent.WITHDRAW)
    assert again.next is Release.WITHDRAWN and again.effects == ()
