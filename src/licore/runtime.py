"""Runtime decisions (spec 4.5, 5 and 6; contract 5): who passes, and which alerts a call
raises. Pure: the service loads the facts in one query and stores what this returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import attrs

from licore.licenses import LicenseState, PlacePolicy, expired, in_force
from licore.model import License, Product, UnlockData

UNLOCK_VALIDITY = 300  # seconds, spec section 8
NONCE_MEMORY = 600  # a nonce is refused again while its payload could still be valid

LEAKED_KEY = "leaked_key"
STOLEN_PRODUCT = "stolen_product"
KEY_USER_MISMATCH = "key_user_mismatch"
INVALID_KEY_FOR_LICENSE = "invalid_key_for_license"
UNRECOGNISED_PLACE = "unrecognised_place"


@attrs.frozen
class Caller:
    """A runtime request once its shape is known to be right."""

    user_id: str
    product_id: str
    key: str
    game_id: str | None = None


@attrs.frozen
class Facts:
    """Everything a decision needs, loaded together: the license the key belongs to (if
    any), its product, and whether the caller is on that studio's blacklist."""

    license: License | None
    product: Product | None
    place_limit: int
    blacklisted: bool
    places_seen: int = 0  # distinct places the license was used from
    place_rank: int | None = None  # 1 for the license's first place; None if new
    tier_unlock_data: UnlockData | None = None  # the license's tier's; None: the product's


@attrs.frozen
class AlertDraft:
    kind: str
    license_id: str | None
    platform_id: str | None
    key_owner_platform_id: str | None
    game_id: str | None
    script_name: str | None = None


@attrs.frozen
class Verdict:
    ok: bool
    alerts: tuple[AlertDraft, ...] = ()


def judge(caller: Caller, facts: Facts, now: int) -> Verdict:
    """The license check shared by every runtime call that carries a key. A license past its
    expiry fails exactly as an inactive one does."""
    lic = facts.license
    if lic is None or facts.product is None or lic.product_id != caller.product_id:
        return Verdict(False)  # no license behind this key for this product
    if lic.platform_id != caller.user_id:
        # A key used under another user id: the call fails and the seller hears of it.
        return Verdict(False, (AlertDraft(LEAKED_KEY, lic.id, caller.user_id, lic.platform_id,
                                          caller.game_id),))
    if not in_force(lic, now, facts.product.grace_days) or facts.blacklisted:
        return Verdict(False)
    return Verdict(True)


@attrs.frozen
class SourceFacts:
    """What /verify-source decides on: the product named, the license the key belongs to,
    the caller's own license for the product, the blacklist, and the live version's stored
    sources of scripts with the given name."""

    product: Product | None
    key_license: License | None
    user_license: License | None
    blacklisted: bool
    stored: tuple[bytes, ...]


# /verify-source (spec 4.5): the five conditions, each a named rule, in the order that
# decides which alert a failing call raises. A rule answers None when its condition holds, or
# the denial (with the alert of spec section 6, if any) when it does not.
SourceRule = Callable[["_SourceCall"], "Verdict | None"]


@attrs.frozen
class _SourceCall:
    caller: Caller
    script_name: str
    source: bytes
    facts: SourceFacts
    product: Product
    key_license: License | None  # the key's license, if it is one of this product's
    now: int

    def alert(self, kind: str, license_id: str, owner: str | None) -> Verdict:
        return Verdict(False, (AlertDraft(kind, license_id, self.caller.user_id, owner, None,
                                          self.script_name),))


def _key_is_the_users(call: _SourceCall) -> Verdict | None:
    """3 (first half): a key of another account is a mismatch the seller hears of."""
    key = call.key_license
    if key is not None and key.platform_id != call.caller.user_id:
        return call.alert(KEY_USER_MISMATCH, key.id, key.platform_id)
    return None


def _holds_a_license(call: _SourceCall) -> Verdict | None:
    """2: the user holds a license (an inactive one is no license, nor is one past its end:
    both refused quietly)."""
    mine = call.facts.user_license
    gone = mine is None or mine.state is LicenseState.INACTIVE or expired(mine, call.now)
    return Verdict(False) if gone else None


def _key_matches_an_active_license(call: _SourceCall) -> Verdict | None:
    """2 and 3: the key is the user's license's, and that license is not paused."""
    mine, key = call.facts.user_license, call.key_license
    assert mine is not None  # `_holds_a_license` came first
    if key is None or key.id != mine.id or mine.state is LicenseState.PAUSED:
        return call.alert(INVALID_KEY_FOR_LICENSE, mine.id, key.platform_id if key else None)
    return None


def _not_blacklisted(call: _SourceCall) -> Verdict | None:
    """4: the user is not on the studio's blacklist."""
    return Verdict(False) if call.facts.blacklisted else None


def _source_is_stored(call: _SourceCall) -> Verdict | None:
    """5: the live version has a script of that name, and `source` is byte-identical to one
    (a name the live version lacks raises nothing: a newer build may call with it)."""
    if not call.facts.stored:
        return Verdict(False)
    if call.source not in call.facts.stored:
        mine = call.facts.user_license
        assert mine is not None
        return call.alert(STOLEN_PRODUCT, mine.id, mine.platform_id)
    return None


SOURCE_RULES: tuple[SourceRule, ...] = (
    _key_is_the_users, _holds_a_license, _key_matches_an_active_license, _not_blacklisted,
    _source_is_stored)


def verify_source(caller: Caller, script_name: str, source: bytes,
                  facts: SourceFacts, now: int) -> Verdict:
    """The five conditions of spec 4.5 (`SOURCE_RULES`), and the alerts of spec section 6.

    1: the product exists and "Verify scripts" is on; with it off the answer is false and
    nothing is raised (the seller asked for no verification)."""
    product = facts.product
    if product is None or not product.verify_scripts:
        return Verdict(False)
    key = facts.key_license
    call = _SourceCall(caller, script_name, source, facts, product,
                       key if key is not None and key.product_id == product.id else None, now)
    for rule in SOURCE_RULES:
        denied = rule(call)
        if denied is not None:
            return denied
    return Verdict(True)


class Effects(NamedTuple):
    """What a judged call leaves behind: whether it passes, the alerts it raises, the new
    place to remember and the nonce to spend (only for a call that passes). A named tuple
    rather than an attrs class: one is made per runtime call, and a tuple is made in a
    third of the time of a frozen attrs instance."""

    ok: bool
    alerts: tuple[AlertDraft, ...] = ()
    license_id: str | None = None
    place: str | None = None  # a game id the license was not seen in before
    nonce: str | None = None

    @property
    def only_nonce(self) -> bool:
        """The common sealed call: its one effect can join other calls' in one statement."""
        return self.nonce is not None and not self.alerts and self.place is None


def effects(caller: Caller, facts: Facts, nonce: str | None, now: int) -> Effects:
    """The license check (`judge`), then for a call that passes the place it comes from
    (remembered when new, an alert past the limit) and its nonce. Under the product's
    `enforce` policy a call from a place past the limit fails as a wrong key does, raises
    the alert, and its place is not remembered (raising the limit later lets it in)."""
    verdict = judge(caller, facts, now)
    lic = facts.license
    if not verdict.ok or lic is None:
        return Effects(False, verdict.alerts)
    extra = place_alert(caller, lic.id, facts)
    if place_refused(facts, extra):
        return Effects(False, verdict.alerts + ((extra,) if extra else ()))
    place = caller.game_id if new_place(caller, facts) else None
    return Effects(True, verdict.alerts + ((extra,) if extra else ()), lic.id, place, nonce)


def new_place(caller: Caller, facts: Facts) -> bool:
    return caller.game_id is not None and facts.place_rank is None


def place_alert(caller: Caller, license_id: str, facts: Facts) -> AlertDraft | None:
    """A call from a place past the first `place_limit` the license was seen in; every
    such call raises it again, and repeats within the window bump its count."""
    rank = facts.place_rank if facts.place_rank is not None else facts.places_seen + 1
    if caller.game_id is None or rank <= facts.place_limit:
        return None
    return AlertDraft(UNRECOGNISED_PLACE, license_id, caller.user_id, caller.user_id,
                      caller.game_id)


def place_refused(facts: Facts, alert: AlertDraft | None) -> bool:
    """Whether a call that raised `alert` (or none) fails for its place: only under the
    product's `enforce` policy, and then as a wrong key does."""
    return (alert is not None and alert.kind == UNRECOGNISED_PLACE
            and facts.product is not None
            and facts.product.place_policy is PlacePolicy.ENFORCE)


def unlock_data(facts: Facts) -> UnlockData:
    """What `/unlock` seals: the license's tier's data, else the product's."""
    if facts.tier_unlock_data is not None:
        return facts.tier_unlock_data
    return facts.product.unlock_data if facts.product is not None else UnlockData()


def wants_update(latest: str | None, current: str | None) -> bool:
    """`update` of /version and /update: a version exists and differs from `current`."""
    if latest is None:
        return False
    return current is None or latest != current
