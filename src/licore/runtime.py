"""Runtime decisions (spec 4.5, 5 and 6; contract 5): who passes, and which alerts a call
raises. Pure: the service loads the facts in one query and stores what this returns."""

from __future__ import annotations

import attrs

from licore.licenses import LicenseState, PlacePolicy, expired, in_force
from licore.model import License, Product

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
    tier_unlock_data: str | None = None  # the license's tier's; None: the product's own


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
    if not in_force(lic, now) or facts.blacklisted:
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


def verify_source(caller: Caller, script_name: str, source: bytes,
                  facts: SourceFacts, now: int) -> Verdict:
    """The five conditions of spec 4.5, and the alerts of spec section 6.

    With "Verify scripts" off the answer is false and nothing is raised: the seller asked
    for no verification. A name that is not in the live version raises nothing either: a
    build newer than the live one may call with it."""
    product = facts.product
    if product is None or not product.verify_scripts:
        return Verdict(False)
    key_license = facts.key_license
    if key_license is not None and key_license.product_id != product.id:
        key_license = None
    refused = _license_refusal(caller, script_name, key_license, facts.user_license, now)
    if refused is not None:
        return refused
    mine = facts.user_license
    assert mine is not None  # _license_refusal refuses a caller without a license
    if facts.blacklisted or not facts.stored:
        return Verdict(False)
    if source not in facts.stored:
        return Verdict(False, (AlertDraft(STOLEN_PRODUCT, mine.id, caller.user_id,
                                          mine.platform_id, None, script_name),))
    return Verdict(True)


def _license_refusal(caller: Caller, script_name: str, key_license: License | None,
                     mine: License | None, now: int) -> Verdict | None:
    """The refusal of `verify_source` on the licenses, or None when the key is the
    caller's own active license of the product. An expired license is refused as an
    inactive one is: quietly."""
    if key_license is not None and key_license.platform_id != caller.user_id:
        return Verdict(False, (AlertDraft(KEY_USER_MISMATCH, key_license.id, caller.user_id,
                                          key_license.platform_id, None, script_name),))
    if mine is None or mine.state is LicenseState.INACTIVE or expired(mine, now):
        return Verdict(False)
    if key_license is None or key_license.id != mine.id or mine.state is LicenseState.PAUSED:
        return Verdict(False, (AlertDraft(
            INVALID_KEY_FOR_LICENSE, mine.id, caller.user_id,
            key_license.platform_id if key_license else None, None, script_name),))
    return None


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


def unlock_data(facts: Facts) -> str:
    """What `/unlock` seals: the license's tier's data, else the product's."""
    if facts.tier_unlock_data is not None:
        return facts.tier_unlock_data
    return facts.product.unlock_data if facts.product is not None else "null"


def wants_update(latest: str | None, current: str | None) -> bool:
    """`update` of /version and /update: a version exists and differs from `current`."""
    if latest is None:
        return False
    return current is None or latest != current
