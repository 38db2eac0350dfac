"""The rows, one dict per table keyed by the table's primary key, and the helpers every
in-memory repository shares. Records are frozen attrs values, so a snapshot of the tables is
a copy of each dict, and rolling back is putting the copies back."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from licore.audit import AuditEntry
from licore.events import ChatRole, Message, WebhookEndpoint
from licore.images import ProductImage
from licore.lanes import Breaker
from licore.model import (
    Account,
    Alert,
    ApiKey,
    Client,
    DeviceAuthorization,
    IdempotencyRecord,
    License,
    Membership,
    Page,
    Plan,
    Product,
    Studio,
    Tier,
    Version,
    VersionScript,
)
from licore.update_files import FileForm, UpdateFile

T = TypeVar("T")


@attrs.define
class Tables:
    accounts: dict[str, Account] = attrs.Factory(dict)
    studios: dict[str, Studio] = attrs.Factory(dict)
    memberships: dict[tuple[str, str], Membership] = attrs.Factory(dict)
    clients: dict[str, Client] = attrs.Factory(dict)
    devices: dict[str, DeviceAuthorization] = attrs.Factory(dict)
    api_keys: dict[str, ApiKey] = attrs.Factory(dict)
    products: dict[str, Product] = attrs.Factory(dict)
    slug_twins: dict[str, int] = attrs.Factory(dict)  # slug base -> numbers handed out
    blobs: dict[str, bytes] = attrs.Factory(dict)
    versions: dict[str, Version] = attrs.Factory(dict)
    scripts: dict[str, tuple[VersionScript, ...]] = attrs.Factory(dict)
    # (version id, license id) -> (key generation, file)
    copies: dict[tuple[str, str], tuple[int, bytes]] = attrs.Factory(dict)
    copy_nodes: dict[tuple[str, str, bool], tuple[int, bytes]] = attrs.Factory(dict)
    # (version, license, form) -> (key generation, file)
    update_files: dict[tuple[str, str, FileForm], tuple[int, UpdateFile]] = attrs.Factory(
        dict)
    templates: dict[tuple[str, bool], bytes] = attrs.Factory(dict)  # (version, compact)
    licenses: dict[str, License] = attrs.Factory(dict)
    alerts: dict[str, Alert] = attrs.Factory(dict)
    # (studio id, platform id) -> when it was added
    blacklist: dict[tuple[str, str], int] = attrs.Factory(dict)
    # (license id, nonce) -> expires at
    nonces: dict[tuple[str, str], int] = attrs.Factory(dict)
    # (license id, game id) -> rank
    places: dict[tuple[str, str], int] = attrs.Factory(dict)
    # (license id, game id) -> first seen at
    place_times: dict[tuple[str, str], int] = attrs.Factory(dict)
    # product id -> its tiers
    tiers: dict[str, tuple[Tier, ...]] = attrs.Factory(dict)
    plans: dict[str, tuple[Plan, ...]] = attrs.Factory(dict)  # product id -> its plans
    # (license id, notice column) -> the `expires_at` it was told for
    told: dict[tuple[str, str], int] = attrs.Factory(dict)
    # (product id, platform id) -> when the trial started
    trials: dict[tuple[str, str], int] = attrs.Factory(dict)
    purchases: dict[tuple[str, str], str] = attrs.Factory(dict)  # -> license id
    # (bucket, window start) -> count
    counters: dict[tuple[str, int], int] = attrs.Factory(dict)
    outbox: dict[str, Message] = attrs.Factory(dict)
    # lane -> its breaker, when not the default one
    breakers: dict[str, Breaker] = attrs.Factory(dict)
    endpoints: dict[str, WebhookEndpoint] = attrs.Factory(dict)
    chat_roles: dict[str, tuple[ChatRole, ...]] = attrs.Factory(dict)
    # platform id -> chat user id
    chat_links: dict[str, str] = attrs.Factory(dict)
    # (owner, key) -> the record
    idempotency: dict[tuple[str, str], IdempotencyRecord] = attrs.Factory(dict)
    # (product id, hour, endpoint, outcome) -> calls
    usage_calls: dict[tuple[str, int, str, str], int] = attrs.Factory(dict)
    # (product id, hour, user id or game id) -> 1: the users and places seen that hour
    usage_users: dict[tuple[str, int, str], int] = attrs.Factory(dict)
    usage_places: dict[tuple[str, int, str], int] = attrs.Factory(dict)
    # (product id, hour, kind, subject) -> count
    usage_events: dict[tuple[str, int, str, str], int] = attrs.Factory(dict)
    # image id -> the image and its file
    images: dict[str, tuple[ProductImage, bytes]] = attrs.Factory(dict)
    audit: dict[str, AuditEntry] = attrs.Factory(dict)  # id -> entry (docs/audit.md)

    def snapshot(self) -> Tables:
        return Tables(**{f.name: dict(getattr(self, f.name)) for f in attrs.fields(Tables)})

    def restore(self, snapshot: Tables) -> None:
        for f in attrs.fields(Tables):
            setattr(self, f.name, getattr(snapshot, f.name))


class Repository:
    def __init__(self, tables: Tables) -> None:
        self.t = tables


def first(rows: Iterable[T], match: Callable[[T], bool]) -> T | None:
    return next((r for r in rows if match(r)), None)


def page(rows: Iterable[T], key: Callable[[T], str], limit: int | None,
         cursor: str | None) -> Page[T]:
    """One page in id order, as the SQL adapters cut it: ids after `cursor`, `limit` of
    them, and the last one's id as the next cursor when more follow."""
    ordered = sorted((r for r in rows if cursor is None or key(r) > cursor), key=key)
    if limit is not None and len(ordered) > limit:
        return Page(tuple(ordered[:limit]), key(ordered[limit - 1]))
    return Page(tuple(ordered), None)


def replace_if(table: dict[str, Any], record: Any, state_is: Any) -> bool:
    """Compare and set: store `record` only if the stored row's state is still `state_is`."""
    stored = table.get(record.id)
    if stored is None or stored.state != state_is:
        return False
    table[record.id] = record
    return True
