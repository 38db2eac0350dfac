"""What each audited record may show, and how a change of a record is named: the audit trail's
rules as data (docs/audit.md). A field left out of a `SHOWN` set is told by name only, never
by value, so the secrets (license keys and their digests, API key digests, password digests,
webhook secrets, device codes) cannot reach an entry, and neither can a field added later
until someone puts it here."""

from __future__ import annotations

from licore.events import license_topic
from licore.model import License, Product

LICENSE_SHOWN = frozenset({"product_id", "platform_id", "source", "state", "expires_at",
                           "tier", "transferred_to", "key_generation", "verified_at",
                           "purchase_id", "channel"})
PRODUCT_SHOWN = frozenset({"slug", "title", "tagline", "description", "price_credit",
                           "discoverable", "licensing_enabled", "placeholder",
                           "verify_scripts", "purchase_pass_id", "place_limit", "place_policy",
                           "trial_days", "reminder_days", "hub_place_id", "grace_days"})
# Told by `version.published`, not as a change of the product.
PRODUCT_QUIET = frozenset({"id", "studio_id", "created_at", "updated_at",
                           "current_version_id", "current_version", "beta_version_id",
                           "beta_version"})
# The settings of a build (`POST /v1/packages/settings`, the dashboard's settings form).
PRODUCT_SETTINGS = frozenset({"placeholder", "verify_scripts", "unlock_data", "protection",
                              "purchase_pass_id", "place_limit", "place_policy", "trial_days",
                              "reminder_days", "hub_place_id", "grace_days"})
VERSION_SHOWN = frozenset({"product_id", "label", "format", "size_bytes", "sha256",
                           "channel", "withdrawn_at"})
IMAGE_SHOWN = frozenset({"product_id", "position", "sha256", "content_type", "width",
                         "height", "size_bytes", "alt"})
KEY_SHOWN = frozenset({"kind", "scopes", "client_id", "account_id", "studio_id"})
CLIENT_SHOWN = frozenset({"name", "description", "scopes", "disabled"})
ACCOUNT_SHOWN = frozenset({"platform_id", "username", "disabled_at"})
STUDIO_SHOWN = frozenset({"name", "owner_account_id", "place_limit"})
WEBHOOK_SHOWN = frozenset({"url", "topics", "disabled_at", "disabled_reason",
                           "previous_until"})
WEBHOOK_QUIET = frozenset({"id", "studio_id", "created_at", "failing_since"})
CREATED = frozenset({"id", "created_at", "updated_at"})

# A license's change is named by the first of these fields that moved (the state by its
# event: `license.revoked`, `license.resumed`, ...).
_LICENSE_ACTIONS = (
    ("transferred_to", "license.transferred"),
    ("key_generation", "license.rekeyed"),
    ("tier", "license.tier_changed"),
    ("expires_at", "license.renewed"),
    ("verified_at", "license.verified"),
    ("channel", "license.channel_changed"),
)


def license_action(before: License, after: License) -> str:
    if before.state != after.state:
        topic = license_topic(before.state, after.state)
        return topic.value if topic is not None else f"license.{after.state.value}"
    for field, action in _LICENSE_ACTIONS:
        if getattr(before, field) != getattr(after, field):
            return action
    return "license.changed"


def product_action(changed: frozenset[str]) -> str:
    return "product.settings_changed" if changed & PRODUCT_SETTINGS else "product.changed"


def product_changed_fields(before: Product, after: Product) -> frozenset[str]:
    return frozenset(name for name in PRODUCT_SHOWN | PRODUCT_SETTINGS
                     if getattr(before, name) != getattr(after, name))
