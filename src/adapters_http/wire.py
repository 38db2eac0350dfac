"""The specification's bodies, made from the domain values the use cases return.

Field names, their order and their JSON types are the specification's (spec 2 and 4,
contract 3 to 5); the OpenAPI document (`openapi.py`) describes the same shapes and a test
checks real answers against it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from licore import licenses
from licore.audit import AuditEntry
from licore.events import ChatRole, Message, MessageKind, MessageState, WebhookEndpoint
from licore.images import ProductImage
from licore.licenses import LicenseState
from licore.model import Alert, License, Page, Place, Plan, Product, Version
from licore.ports import LibraryEntry
from licore.protection import ProtectionProblem, settings_document
from licore.services.claims import Claim
from licore.services.license_lifecycle import LicensePolicy, Transferred

J = dict[str, Any]
T = TypeVar("T")


def iso(ts: int | None) -> str | None:
    """Unix seconds as ISO 8601 in UTC, `Z` suffixed."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def listing(name: str, page: Page[T], view: Callable[[T], J], limit: int | None) -> J:
    """`{name: [...]}`, plus `next_cursor` when the caller asked for a page (contract 3)."""
    body: J = {name: [view(item) for item in page.items]}
    if limit is not None:
        body["next_cursor"] = page.next_cursor
    return body


OK: J = {"ok": True}


# Partner API ------------------------------------------------------------------------------


def product(p: Product) -> J:
    return {"id": p.id, "slug": p.slug, "title": p.title, "tagline": p.tagline,
            "price_credit": p.price_credit, "discoverable": p.discoverable,
            "licensing_enabled": p.licensing_enabled, "current_version": p.current_version}


def saved_product(p: Product) -> J:
    """The answer to a create and to a change (contract 3)."""
    return {"ok": True, "id": p.id, "slug": p.slug, "discoverable": p.discoverable}


def license(lc: License, now: int | None = None, grace_days: int | None = None) -> J:
    """The specification's fields; given the time, also licore's terms (docs/licenses.md):
    `status`, `expires_at`, `tier`, `purchase_id` and `transferred_to` (who a license
    transferred away went to), and `is_active` false once the license expired; given the
    product's grace too, `in_grace` and `grace_ends_at`."""
    body: J = {"id": lc.id, "platform_id": lc.platform_id, "verified_at": iso(lc.verified_at),
               "is_active": lc.state is LicenseState.ACTIVE, "source": lc.source.value,
               "state": lc.state.value}
    if now is not None:
        body.update(is_active=licenses.in_force(lc, now), status=licenses.status(lc, now),
                    expires_at=iso(lc.expires_at), tier=lc.tier, purchase_id=lc.purchase_id,
                    transferred_to=lc.transferred_to)
    if now is not None and grace_days is not None:
        body.update(is_active=licenses.in_force(lc, now, grace_days),
                    status=licenses.status(lc, now, grace_days),
                    in_grace=licenses.in_grace(lc, now, grace_days),
                    grace_ends_at=iso(licenses.grace_end(lc, grace_days)))
    return body


def granted(lc: License, now: int | None = None) -> J:
    return {"ok": True, "license": license(lc, now)}


def transferred(moved: Transferred, now: int) -> J:
    return {"ok": True, "license": license(moved.new, now),
            "transferred_from": license(moved.old, now)}


def place(p: Place) -> J:
    return {"game_id": p.game_id, "rank": p.place_rank, "first_seen_at": iso(p.first_seen_at)}


def license_policy(policy: LicensePolicy) -> J:
    p = policy.product
    return {"product_id": p.id, "place_limit": policy.place_limit,
            "place_policy": p.place_policy.value, "trial_days": p.trial_days or 0,
            "reminder_days": p.reminder_days or 0, "grace_days": p.grace_days or 0,
            "tiers": [{"name": t.name, "unlock_data": t.unlock_data.value()}
                      for t in policy.tiers],
            "plans": [plan(x) for x in policy.plans]}


def plan(p: Plan) -> J:
    return {"id": p.id, "name": p.name, "duration_days": p.duration_days, "tier": p.tier}


def library_product(entry: LibraryEntry) -> J:
    p = entry.product
    return {"id": p.id, "slug": p.slug, "title": p.title, "studio": entry.studio_name,
            "current_version": p.current_version, "acquired_at": iso(entry.license.created_at),
            # extension (docs/api.md, "Release channels")
            "channel": entry.license.channel.value, "beta_version": p.beta_version}


def claimed(claim: Claim) -> J:
    """Extension (docs/platform.md): what a purchase-pass claim did."""
    return {"ok": True, "result": claim.result.value, "product_id": claim.product.id,
            "license": license(claim.license)}


def library_version(v: Version, of: Product, beta: bool = False) -> J:
    """`beta`: the person follows beta, so beta builds are listed and each version says its
    channel (extension, docs/api.md "Release channels"); otherwise the specification's
    shape, exactly."""
    shown = {"id": v.id, "version": v.label, "size_bytes": v.size_bytes, "sha256": v.sha256,
             "live": v.id == of.current_version_id, "created_at": iso(v.created_at)}
    if beta:
        shown["channel"] = v.channel.value
    return shown


def alert(a: Alert) -> J:
    return {"id": a.id, "kind": a.kind, "product_id": a.product_id, "license_id": a.license_id,
            "platform_id": a.platform_id, "key_owner_platform_id": a.key_owner_platform_id,
            "game_id": a.game_id, "script_name": a.script_name, "count": a.count,
            "first_seen_at": iso(a.first_seen_at), "last_seen_at": iso(a.last_seen_at)}


def package(p: Product, labels: Iterable[str] | None = None) -> J:
    body: J = {"product_id": p.id, "slug": p.slug, "title": p.title,
               "current_version": p.current_version}
    if labels is not None:
        body["versions"] = list(labels)
    body.update(placeholder=p.placeholder, verify_scripts=p.verify_scripts,
                beta_version=p.beta_version)
    return body


def package_version(v: Version, of: Product) -> J:
    return {"id": v.id, "version": v.label, "size_bytes": v.size_bytes, "sha256": v.sha256,
            "live": v.id == of.current_version_id, "published": v.published,
            "created_at": iso(v.created_at), "format": v.format,
            # extension (docs/api.md, "Release channels"): the channel it was published to
            "channel": v.channel.value if v.published else None,
            "beta": v.id == of.beta_version_id, "withdrawn": v.withdrawn_at is not None,
            "withdrawn_at": iso(v.withdrawn_at)}


def package_settings(p: Product) -> J:
    return {"ok": True, **package(p), "unlock_data": p.unlock_data.value(),
            "protection": settings_document(p.protection),
            # extension (docs/platform.md)
            "purchase_pass_id": p.purchase_pass_id,
            # extension (docs/selling.md)
            "hub_place_id": p.hub_place_id}


def published(p: Product, v: Version) -> J:
    return {"ok": True, **package(p), "version": package_version(v, p)}


def protection_notes(notes: Sequence[ProtectionProblem]) -> list[J]:
    """What the protector works around in a build (extension, docs/protection.md)."""
    return [{"path": n.path, "line": n.line or None, "message": n.message} for n in notes]


# Events leaving the service (docs/events.md, an extension) ---------------------------------


def webhook(e: WebhookEndpoint) -> J:
    return {"id": e.id, "url": e.url, "events": list(e.topics), "created_at": iso(e.created_at),
            "enabled": e.disabled_at is None, "disabled_at": iso(e.disabled_at),
            "disabled_reason": e.disabled_reason or None,
            "failing_since": iso(e.failing_since),
            "previous_secret_valid_until": iso(e.previous_until)}


def webhook_secret(e: WebhookEndpoint, secret: str) -> J:
    """The one answer that shows the secret (creation, rotation)."""
    return {"ok": True, **webhook(e), "secret": secret}


def audit_entry(e: AuditEntry) -> J:
    """An audit entry (docs/audit.md); a change told by name alone has null values."""
    return {"id": e.id, "at": iso(e.at),
            "actor": {"kind": e.actor.kind.value, "id": e.actor.id, "key_id": e.actor.key_id},
            "request_id": e.request_id, "action": e.action,
            "subject": {"type": e.subject_type, "id": e.subject_id},
            "changes": [{"field": c.field, "shown": c.shown,
                         "old": list(c.old) if isinstance(c.old, tuple) else c.old,
                         "new": list(c.new) if isinstance(c.new, tuple) else c.new}
                        for c in e.changes]}


def delivery(m: Message) -> J:
    body: J = {"id": m.id, "event": m.topic, "state": m.state.value, "attempts": m.attempts,
               "created_at": iso(m.created_at), "delivered_at": iso(m.delivered_at),
               "next_attempt_at": (iso(m.next_attempt_at)
                                   if m.state is MessageState.PENDING else None),
               "last_status": m.last_status, "last_error": m.last_error or None,
               "last_duration_ms": m.last_duration_ms}
    if m.kind is MessageKind.WEBHOOK:
        body["endpoint_id"] = m.target
    else:
        guild, _, role = m.target.partition("/")
        body.update(license_id=m.subject, guild_id=guild, role_id=role)
    return body


IMAGES_PATH = "/store/images/"  # where the site serves an image's file (docs/api.md)


def image(i: ProductImage) -> J:
    return {"id": i.id, "position": i.position, "path": IMAGES_PATH + i.file_name,
            "content_type": i.content_type, "width": i.width, "height": i.height,
            "size_bytes": i.size_bytes, "sha256": i.sha256, "alt": i.alt,
            "created_at": iso(i.created_at)}


def images(product_id: str, found: Iterable[ProductImage]) -> J:
    return {"product_id": product_id, "images": [image(i) for i in found]}


def chat_role(r: ChatRole) -> J:
    return {"guild_id": r.guild_id, "role_id": r.role_id}
