"""Commands of the license lifecycle (docs/licenses.md): transfer, expiry and renewal,
trials, tiers, re-keying, places. Each checks its own fields, so a command that exists is
well formed; whether it may happen is the use case's (`services.license_lifecycle`)."""

from __future__ import annotations

from typing import Any

import attrs

from licore import bounds
from licore.commands import JsonValue, LicenseTarget, compact_json
from licore.errors import InvalidRequest
from licore.licenses import (
    GRANT_SOURCES,
    MAX_GRACE_DAYS,
    MAX_REMINDER_DAYS,
    PlacePolicy,
    Source,
)

PLACE_LIMIT = bounds.WholeNumber(1, 1000)
TRIAL_DAYS = bounds.WholeNumber(0, 365)  # 0 takes the trial away
REMINDER_DAYS = bounds.WholeNumber(0, MAX_REMINDER_DAYS)  # 0 takes the reminder away
GRACE_DAYS = bounds.WholeNumber(0, MAX_GRACE_DAYS)  # 0 takes the grace away
DURATION_DAYS = bounds.WholeNumber(1, 36500)
# Unix seconds up to the year 9999: anything later is a mistake, not a plan.
TIMESTAMP = bounds.WholeNumber(1, 253_402_300_799)
TIER_NAME = bounds.Text(min_len=1, max_len=32, pattern=r"[A-Za-z0-9][A-Za-z0-9_-]*",
                        shape="letters, digits, '-' and '_', starting with a letter or digit")
MAX_TIERS = 20
MAX_PLANS = 20
PLAN_ID = TIER_NAME  # the same shape: letters, digits, '-' and '_'
PLAN_NAME = bounds.Text(min_len=1, max_len=64)
# The sale a license came from, as the seller's hub names it: a receipt's `PurchaseId`, say.
PURCHASE_ID = bounds.Text(min_len=1, max_len=128, pattern=r"[\x21-\x7e]+",
                          shape="1 to 128 visible ASCII characters (no spaces)")


def _grantable(instance: Any, attribute: attrs.Attribute[Any], value: Source) -> None:
    if value not in GRANT_SOURCES:
        raise InvalidRequest(
            "source must be one of " + ", ".join(s.value for s in GRANT_SOURCES)
            + " (purchase_pass is given by a claim the platform confirms)", "source")


@attrs.frozen
class TransferLicense:
    """Move a license from one person to another (`from_user`, `to_user`: a numeric platform
    id or a username, as `LicenseTarget.user`)."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    from_user: str = attrs.field(validator=bounds.IDENTIFIER)
    to_user: str = attrs.field(validator=bounds.IDENTIFIER)

    def __attrs_post_init__(self) -> None:
        LicenseTarget(self.product_id, self.from_user)  # the same rules as any target
        LicenseTarget(self.product_id, self.to_user)


def _one_of(instance: Any, *names: str) -> None:
    sent = [n for n in names if getattr(instance, n) is not None]
    if len(sent) != 1:
        raise InvalidRequest(f"send exactly one of {', '.join(names)}", names[0])


@attrs.frozen
class Terms:
    """An end for a license: at `expires_at` (unix seconds), or `duration_days` from the
    later of now and its current end. Neither: no end (a grant that never expires)."""

    expires_at: int | None = attrs.field(default=None, validator=TIMESTAMP)
    duration_days: int | None = attrs.field(default=None, validator=DURATION_DAYS)

    def __attrs_post_init__(self) -> None:
        if self.expires_at is not None and self.duration_days is not None:
            raise InvalidRequest("send expires_at or duration_days, not both", "expires_at")


@attrs.frozen
class RenewLicense:
    target: LicenseTarget
    terms: Terms

    def __attrs_post_init__(self) -> None:
        _one_of(self.terms, "expires_at", "duration_days")


@attrs.frozen
class GrantLicense:
    """The specification's grant, with licore's terms: an end and a tier; and where it came
    from (a source and the sale's id, when a seller's hub sold it)."""

    target: LicenseTarget
    terms: Terms = Terms()
    tier: str | None = attrs.field(default=None, validator=TIER_NAME)
    source: Source = attrs.field(default=Source.GRANT, validator=_grantable)
    purchase_id: str | None = attrs.field(default=None, validator=PURCHASE_ID)
    # One of the product's plans (docs/licenses.md, "Plans"): its term and tier, in place
    # of `terms` and `tier`.
    plan: str | None = attrs.field(default=None, validator=PLAN_ID)

    def __attrs_post_init__(self) -> None:
        if self.plan is not None and (self.tier is not None or self.terms != Terms()):
            raise InvalidRequest("send plan, or expires_at, duration_days and tier; not both",
                                 "plan")


@attrs.frozen
class SetTier:
    target: LicenseTarget
    tier: str | None = attrs.field(default=None, validator=TIER_NAME)  # None: the product's


@attrs.frozen
class TierSpec:
    name: str = attrs.field(validator=TIER_NAME)
    unlock_data: JsonValue = attrs.field()

    @unlock_data.validator
    def _size(self, attribute: attrs.Attribute[Any], value: JsonValue) -> None:
        if len(compact_json(value).encode()) > bounds.UNLOCK_DATA_BYTES:
            raise InvalidRequest(
                f"unlock_data must be at most {bounds.UNLOCK_DATA_BYTES} bytes of JSON",
                "tiers")


@attrs.frozen
class PlanSpec:
    id: str = attrs.field(validator=PLAN_ID)
    name: str = attrs.field(validator=PLAN_NAME)
    duration_days: int | None = attrs.field(default=None, validator=DURATION_DAYS)
    tier: str | None = attrs.field(default=None, validator=TIER_NAME)


@attrs.frozen
class SetLicensePolicy:
    """A product's license settings; only the fields sent change. `tiers` replaces the whole
    list (an empty one removes every tier)."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    place_limit: int | None = attrs.field(default=None, validator=PLACE_LIMIT)
    place_policy: PlacePolicy | None = None
    trial_days: int | None = attrs.field(default=None, validator=TRIAL_DAYS)
    tiers: tuple[TierSpec, ...] | None = None
    reminder_days: int | None = attrs.field(default=None, validator=REMINDER_DAYS)
    grace_days: int | None = attrs.field(default=None, validator=GRACE_DAYS)
    plans: tuple[PlanSpec, ...] | None = None  # replaces the whole list

    def __attrs_post_init__(self) -> None:
        if self.plans is not None:
            if len(self.plans) > MAX_PLANS:
                raise InvalidRequest(f"a product may have at most {MAX_PLANS} plans", "plans")
            ids = [p.id for p in self.plans]
            if len(set(ids)) != len(ids):
                raise InvalidRequest("plan ids must differ", "plans")
        if self.tiers is None:
            return
        if len(self.tiers) > MAX_TIERS:
            raise InvalidRequest(f"a product may have at most {MAX_TIERS} tiers", "tiers")
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise InvalidRequest("tier names must differ", "tiers")


@attrs.frozen
class TakeTrial:
    """A person starts their own trial of a listed product (`POST /v1/library/trial`)."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)


@attrs.frozen
class RekeyOwn:
    """A holder asks for a new key of their own license (`POST /v1/library/rekey`), when
    the old one leaked."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)


@attrs.frozen
class PolicyOf:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)


# The same commands as an API body or a form sends them: one flat object. Each makes its
# command, whose own checks then apply.


@attrs.frozen
class GrantForm:
    product_id: str
    user: str = ""  # or `chat_user`
    chat_user: str | None = None
    expires_at: int | None = None
    duration_days: int | None = None
    tier: str | None = None
    source: Source | None = None  # None: `grant`
    purchase_id: str | None = None
    plan: str | None = None

    def command(self) -> GrantLicense:
        return GrantLicense(LicenseTarget(self.product_id, self.user, self.chat_user),
                            Terms(self.expires_at, self.duration_days), self.tier,
                            self.source or Source.GRANT, self.purchase_id, self.plan)


@attrs.frozen
class RenewForm:
    product_id: str
    user: str
    expires_at: int | None = None
    duration_days: int | None = None

    def command(self) -> RenewLicense:
        return RenewLicense(LicenseTarget(self.product_id, self.user),
                            Terms(self.expires_at, self.duration_days))


@attrs.frozen
class TierForm:
    product_id: str
    user: str
    tier: str | None  # must be sent; null puts the license back on the product's own data

    def command(self) -> SetTier:
        return SetTier(LicenseTarget(self.product_id, self.user), self.tier)
