"""What leaves the service (docs/events.md): the events sellers hear about, the messages of the
one outbox that carries them, and the retry schedule. Pure values and arithmetic; the
workers that deliver the messages live in `licore.services.delivery` and the adapters.

A message is written in the same unit of work as the change it tells about, so a change is
never told without having happened and never happens without being told. Delivery is
at-least-once: the message id is the idempotency key a receiver deduplicates on.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import attrs

from licore.lanes import STUDIO_SLOTS, BreakerPolicy, lane_of
from licore.licenses import LicenseState


class Topic(enum.Enum):
    """The event types a webhook endpoint subscribes to (docs/events.md lists each payload)."""

    LICENSE_GRANTED = "license.granted"
    LICENSE_REVOKED = "license.revoked"
    LICENSE_PAUSED = "license.paused"
    LICENSE_RESUMED = "license.resumed"
    # Licenses a seller can shape (docs/licenses.md): licore's own events.
    LICENSE_TRANSFERRED = "license.transferred"
    LICENSE_RENEWED = "license.renewed"
    LICENSE_EXPIRING = "license.expiring"
    LICENSE_EXPIRED = "license.expired"
    LICENSE_TIER_CHANGED = "license.tier_changed"
    LICENSE_REKEYED = "license.rekeyed"
    VERSION_PUBLISHED = "version.published"
    VERSION_WITHDRAWN = "version.withdrawn"  # release channels (docs/api.md): licore's own
    ALERT_RAISED = "alert.raised"
    PRODUCT_CHANGED = "product.changed"


TOPICS = tuple(t.value for t in Topic)


class MessageKind(enum.Enum):
    WEBHOOK = "webhook"  # one message per (event, endpoint)
    CHAT_ROLE = "chat_role"  # one message per (license change, role the product names)
    # A product's roles changed: the workers expand it into CHAT_ROLE messages for the
    # people holding the product, a page at a time. In neither delivery log.
    FAN_OUT = "fan_out"


class MessageState(enum.Enum):
    PENDING = "pending"
    DELIVERED = "delivered"
    SKIPPED = "skipped"  # nothing to do: the buyer has linked no chat account
    DEAD = "dead"  # retried past the give-up age, or its endpoint is gone


@attrs.frozen
class WebhookBody:
    """A webhook's body as it is signed and sent, byte for byte: written once, when the event
    happens, so every retry carries the same bytes a receiver can deduplicate and verify."""

    text: str


@attrs.frozen
class RoleChange:
    """Give or take one chat role of one buyer (the message's `topic` says which)."""

    guild_id: str
    role_id: str
    platform_id: str


@attrs.frozen
class FanOut:
    """A product's roles changed: hand out `add` and take back `remove` (guild id, role id)
    for its holders after the license id `after`, one page a transaction."""

    add: tuple[tuple[str, str], ...]
    remove: tuple[tuple[str, str], ...]
    after: str | None = None


Payload = WebhookBody | RoleChange | FanOut


@attrs.frozen
class Message:
    """One row of the outbox. `target` is the webhook endpoint id, or "guild_id/role_id";
    `subject` the license id a chat-role message is about (empty for webhooks)."""

    id: str
    kind: MessageKind
    topic: str
    studio_id: str
    target: str
    subject: str
    payload: Payload  # WebhookBody for WEBHOOK, RoleChange for CHAT_ROLE, FanOut for FAN_OUT
    state: MessageState
    attempts: int
    next_attempt_at: int
    created_at: int
    last_error: str = ""
    last_status: int | None = None  # the receiver's HTTP status on the last attempt
    last_duration_ms: int | None = None
    delivered_at: int | None = None
    claimed_by: str | None = None
    claimed_until: int | None = None  # a lease: another worker may take it after this
    # The destination whose order it keeps (licore.lanes); made from the rest when not given.
    lane: str = attrs.field(default=attrs.Factory(
        lambda m: lane_of(m.kind.value, m.target, m.id), takes_self=True))


@attrs.frozen
class WebhookEndpoint:
    """A seller's receiver. Secrets are kept encrypted under the key-encryption key; after a
    rotation the previous one still signs until `previous_until` (receivers switch over)."""

    id: str
    studio_id: str
    url: str
    topics: tuple[str, ...]
    secret_ciphertext: bytes
    created_at: int
    previous_ciphertext: bytes | None = None
    previous_until: int | None = None
    failing_since: int | None = None  # first failure of the current run of failures
    disabled_at: int | None = None
    disabled_reason: str = ""


@attrs.frozen
class ChatRole:
    """A role in a chat server (guild) that owning a product earns."""

    product_id: str
    guild_id: str
    role_id: str


@attrs.frozen
class Delivered:
    """What one delivery attempt came to, as the adapters report it.

    `done` for success and for outcomes that are as good ("already has the role", "member
    left"); `permanent` for failures retrying cannot mend; `retry_after` when the other side
    said how long to wait (HTTP 429)."""

    done: bool
    status: int | None = None
    error: str = ""
    retry_after: float | None = None
    duration_ms: int | None = None
    permanent: bool = False


@attrs.frozen
class Schedule:
    """Exponential back-off with full jitter: attempt n waits a uniform random time in
    [1, min(cap, base * 2**n)] seconds. A message is given up (dead) only once it is older
    than `give_up_after`, so retries span at least that long whatever the jitter drew."""

    base: int = 5
    cap: int = 3 * 3600
    give_up_after: int = 3 * 86400
    lease: int = 60  # how long a claimed message is a worker's before another may take it
    studio_slots: int = STUDIO_SLOTS  # a studio's messages in flight at once (licore.lanes)
    breaker: BreakerPolicy = attrs.field(factory=BreakerPolicy)


def next_delay(schedule: Schedule, attempts: int, fraction: float,
               retry_after: float | None = None) -> int:
    """Seconds until the next try after `attempts` failed ones; `fraction` in [0, 1) is the
    jitter's random draw. A 429's `retry_after` is a floor, never shortened."""
    ceiling = min(schedule.cap, schedule.base * 2 ** min(attempts, 30))
    delay = max(1, int(ceiling * fraction))
    if retry_after is not None:
        # +1: times are whole seconds, so "now" may already be most of a second old.
        delay = max(delay, int(retry_after + 0.999) + 1)
    return delay


def settle(message: Message, result: Delivered, now: int, schedule: Schedule,
           fraction: float) -> Message:
    """The message after one attempt: delivered, retried later, or dead."""
    attempts = message.attempts + 1
    seen = attrs.evolve(message, attempts=attempts, last_status=result.status,
                        last_error=result.error[:300], last_duration_ms=result.duration_ms,
                        claimed_by=None, claimed_until=None)
    if result.done:
        return attrs.evolve(seen, state=MessageState.DELIVERED, delivered_at=now)
    if result.permanent or now - message.created_at >= schedule.give_up_after:
        return attrs.evolve(seen, state=MessageState.DEAD)
    return attrs.evolve(seen, next_attempt_at=now + next_delay(schedule, message.attempts,
                                                               fraction, result.retry_after))


def license_topic(before: LicenseState, after: LicenseState) -> Topic | None:
    """The event a license transition tells, or None when nothing a receiver cares about
    changed (a re-verified purchase pass, a repeated pause)."""
    if before == after:
        return None
    if after is LicenseState.ACTIVE:
        return Topic.LICENSE_RESUMED if before is LicenseState.PAUSED else Topic.LICENSE_GRANTED
    if after is LicenseState.PAUSED:
        return Topic.LICENSE_PAUSED
    if after is LicenseState.INACTIVE:
        return Topic.LICENSE_REVOKED
    return None


def envelope(topic: Topic, at: int, data: dict[str, Any]) -> WebhookBody:
    """The webhook body: the Standard Webhooks shape `{type, timestamp, data}`. Never carries
    a license key or any other secret."""
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return WebhookBody(json.dumps({"type": topic.value, "timestamp": stamp, "data": data},
                                  separators=(",", ":"), sort_keys=True))
