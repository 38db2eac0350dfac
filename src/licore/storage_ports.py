"""The storage ports: one Protocol per aggregate, the unit of work that reaches them all, and
the storage itself. Only the core's use cases and the storage adapters use these; the HTTP
adapter reaches the core through the built use cases (an import-linter contract)."""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from licore.audit import AuditEntry, AuditFilter
from licore.device_flow import DeviceState
from licore.events import ChatRole, Message, MessageKind, WebhookEndpoint
from licore.images import ImageFile, ProductImage
from licore.lanes import STUDIO_SLOTS, Breaker
from licore.licenses import LicenseState
from licore.model import (
    Account,
    Alert,
    ApiKey,
    Client,
    DeviceAuthorization,
    IdempotencyRecord,
    KeptAnswer,
    License,
    Membership,
    Page,
    Place,
    Plan,
    Product,
    Studio,
    Tier,
    Version,
    VersionScript,
)
from licore.ports import ConnectedApp, LibraryEntry
from licore.releases import Channel
from licore.runtime import Facts as RuntimeFacts
from licore.update_files import FileForm, FileOwner, UpdateFile
from licore.usage import Call, CallCount, EventCount, Reach, Tally

# Storage, one port per aggregate. Conflicts are answered, not raised as driver errors: an
# `add` that would break a uniqueness rule returns False (or None) so the caller can raise
# the specification's error, and the unit of work carries on.


class Accounts(Protocol):
    async def add(self, account: Account) -> bool:
        """False when the username (compared casefolded) is taken."""
        ...
    async def by_id(self, account_id: str) -> Account | None: ...
    async def by_username(self, username: str) -> Account | None: ...
    async def by_platform_id(self, platform_id: str) -> Account | None: ...
    async def all(self) -> Sequence[Account]:
        """Every account by username, for the operator."""
        ...
    async def set_password(self, account_id: str, digest: str | None) -> bool: ...
    async def set_disabled(self, account_id: str, disabled_at: int | None) -> bool:
        """Disable the account from `disabled_at`, or enable it again with None."""
        ...


class Studios(Protocol):
    """Studios and the seats (memberships) people hold in them."""

    async def add(self, studio: Studio) -> bool: ...
    async def by_id(self, studio_id: str) -> Studio | None: ...
    async def by_name(self, name: str) -> Studio | None: ...
    async def put_membership(self, membership: Membership) -> None: ...
    async def membership(self, studio_id: str, account_id: str) -> Membership | None: ...
    async def memberships_of(self, account_id: str) -> Sequence[Membership]: ...
    async def all(self) -> Sequence[Studio]:
        """Every studio by name, for the operator."""
        ...
    async def members(self, studio_id: str) -> Sequence[Membership]: ...
    async def remove_membership(self, studio_id: str, account_id: str) -> bool:
        """False when the account was not a member."""
        ...


class Clients(Protocol):
    async def add(self, client: Client) -> bool: ...
    async def by_id(self, client_id: str) -> Client | None: ...
    async def hold(self, client_id: str) -> Client | None:
        """The client, kept from changing until the unit of work ends, so that a key issued
        in this unit cannot slip past a concurrent disable (which revokes the client's keys)."""
        ...
    async def set_disabled(self, client_id: str, disabled: bool) -> bool:
        """False when there is no such client."""
        ...
    async def by_name(self, name: str) -> Client | None:
        """The app of that name, compared without case."""
        ...
    async def all(self) -> Sequence[Client]:
        """Every app by name, for the operator."""
        ...
    async def describe(self, client: Client) -> bool:
        """Store a client's name, description and scopes; False when there is none."""
        ...


class DeviceAuthorizations(Protocol):
    async def add(self, device: DeviceAuthorization) -> bool:
        """False when the user code is taken."""
        ...
    async def by_code_digest(self, digest: str) -> DeviceAuthorization | None: ...
    async def by_user_code(self, user_code: str) -> DeviceAuthorization | None: ...
    async def replace(self, device: DeviceAuthorization, expected: DeviceState) -> bool:
        """Store `device` only if the stored state is still `expected` (compare and set)."""
        ...


class ApiKeys(Protocol):
    async def add(self, key: ApiKey) -> None: ...
    async def by_digest(self, digest: str) -> ApiKey | None: ...
    async def by_id(self, key_id: str) -> ApiKey | None: ...
    async def touch(self, key_id: str, now: int) -> None:
        """Move `last_used_at` forward to `now` (never back)."""
        ...
    async def revoke(self, key_id: str, now: int) -> bool:
        """False when the key was already revoked (or does not exist)."""
        ...
    async def revoke_all_of_client(self, client_id: str, now: int) -> int:
        """Revoke every active key of the app; how many there were."""
        ...
    async def revoke_all_of_account(self, account_id: str, now: int,
                                    studio_id: str | None = None) -> int:
        """Revoke every active key the account approved (only those acting for `studio_id`
        when given); how many there were."""
        ...
    async def connected_apps(
        self, *, studio_id: str | None = None, account_id: str | None = None
    ) -> Sequence[ConnectedApp]:
        """Active keys acting for a studio, or a person's library keys."""
        ...


class Products(Protocol):
    async def add(self, product: Product, slug_base: str) -> Product:
        """Insert with a free slug of `slug_base` (`slug_base`, then `-2`, `-3`, ... in the
        order twins arrive) and return it, in constant time whatever the number of twins."""
        ...
    async def by_id(self, product_id: str) -> Product | None: ...
    async def hold(self, product_id: str) -> Product | None:
        """`by_id` for a unit of work that will change the product: its row is held until
        the unit ends, so a concurrent unit holding it waits, then reads what this one left
        (two changes read from the same row would each save over the other's)."""
        ...
    async def save(self, product: Product) -> None: ...
    async def of_studio(
        self, studio_id: str, limit: int | None, cursor: str | None
    ) -> Page[Product]: ...
    async def listed(self) -> Sequence[tuple[Product, str]]:
        """Discoverable products with their studio's name, in id order."""
        ...
    async def set_tiers(self, product_id: str, tiers: Sequence[Tier]) -> None:
        """Replace the product's tiers with `tiers`."""
        ...
    async def set_plans(self, product_id: str, plans: Sequence[Plan]) -> None:
        """Replace the product's plans with `plans`."""
        ...
    async def plans(self, product_id: str) -> Sequence[Plan]:
        """The product's plans in the seller's order."""
        ...
    async def tiers(self, product_id: str) -> Sequence[Tier]:
        """The product's tiers by name."""
        ...


class Versions(Protocol):
    """Uploaded build files and the scripts read out of them."""

    async def add(self, version: Version, data: bytes,
                  scripts: Sequence[VersionScript]) -> bool:
        """Store the file and its scripts; False when the label is taken for the product."""
        ...
    async def by_id(self, version_id: str) -> Version | None: ...
    async def mark_published(self, version_id: str, channel: Channel) -> None: ...
    async def withdraw(self, version_id: str, at: int) -> bool:
        """Mark it withdrawn; False when it already was (a concurrent withdraw came
        first)."""
        ...
    async def newest_stable(self, product_id: str) -> Version | None:
        """The newest (last uploaded) version published to stable and not withdrawn."""
        ...
    async def of_product(self, product_id: str, published_only: bool, limit: int | None,
                         cursor: str | None, with_beta: bool = True) -> Page[Version]:
        """Oldest first. `published_only`: the downloadable ones (published, not withdrawn),
        those published to beta only `with_beta`."""
        ...
    async def data(self, version: Version) -> bytes: ...
    async def scripts(self, version_id: str,
                      name: str | None = None) -> Sequence[VersionScript]: ...


class ImageRefused(enum.Enum):
    """Why `Images.add` stored nothing."""

    TAKEN = "taken"  # the product already has an image of these bytes
    FULL = "full"  # the product has as many images as it may


class Images(Protocol):
    """Product images (docs/web.md, "Product images"), each product's in their order."""

    async def add(self, image: ProductImage, data: bytes,
                  most: int) -> ProductImage | ImageRefused:
        """Store the image last in its product's order (its position is how many the
        product had) and return it as stored. Concurrent adds to one product queue, so
        none gets past `most`."""
        ...
    async def of_product(self, product_id: str) -> Sequence[ProductImage]:
        """The product's images by position."""
        ...
    async def firsts(self, product_ids: Sequence[str]) -> Mapping[str, ProductImage]:
        """The first image of each product that has any, by product id."""
        ...
    async def file(self, sha256: str) -> ImageFile | None: ...
    async def remove(self, product_id: str, image_id: str) -> bool:
        """Delete the product's image and close the gap in the order; False when the
        product has no such image."""
        ...
    async def set_alt(self, product_id: str, image_id: str, alt: str) -> ProductImage | None:
        """The image with its new text; None when the product has no such image."""
        ...
    async def set_order(self, product_id: str,
                        image_ids: Sequence[str]) -> Sequence[ProductImage]:
        """Put the images named first, in that order, any others of the product after them
        as they were (an image added meanwhile; one removed meanwhile is skipped); return
        the product's images in their new order, positions from 0."""
        ...


class PreparedCopies(Protocol):
    """Per-buyer copies of a version, kept while the buyer's key generation stands."""

    async def get(self, version_id: str, license_id: str,
                  key_generation: int) -> bytes | None: ...
    async def put(self, version_id: str, license_id: str, key_generation: int,
                  data: bytes) -> None: ...
    async def nodes(self, version_id: str, license_id: str, key_generation: int,
                    compact: bool) -> bytes | None:
        """The copy's `/update` nodes in one form as JSON text, when kept beside it."""
        ...
    async def put_nodes(self, version_id: str, license_id: str, key_generation: int,
                        compact: bool, copy: bytes, nodes: bytes) -> None:
        """Keep the nodes beside the copy they were made from; nothing when the stored copy
        is no longer that one (re-keyed, dropped or remade meanwhile)."""
        ...
    async def file(self, version_id: str, license_id: str, key_generation: int,
                   form: FileForm) -> UpdateFile | None:
        """The update file made of the copy's nodes in one form, when made."""
        ...
    async def put_file(self, version_id: str, license_id: str, key_generation: int,
                       form: FileForm, nodes: bytes, file: UpdateFile) -> None:
        """Name the file made of the nodes kept as `nodes` (encrypted, as kept); nothing
        when the kept nodes are no longer those (the copy re-keyed, dropped or remade)."""
        ...
    async def file_named(self, name: str) -> FileOwner | None:
        """Whose copy the file named `name` holds, while that copy is kept."""
        ...
    async def drop(self, *, license_id: str | None = None, product_id: str | None = None,
                   version_id: str | None = None) -> None:
        """Forget the copies of a license, a product or a version, and their files; a
        version's node templates too (a product's outlive new rules: they depend on the
        build alone)."""
        ...
    async def template(self, version_id: str, compact: bool) -> bytes | None:
        """The version's node template in one form (licore.builds.template), when made."""
        ...
    async def put_template(self, version_id: str, compact: bool, data: bytes) -> None:
        """Keep it (replacing one kept before): it depends on the build alone, so no
        change of settings or licenses drops it."""
        ...


class Notice(enum.Enum):
    """The time-driven events of a license, each written once per `expires_at`."""

    EXPIRED = "expiry_told"
    EXPIRING = "reminder_told"
    GRACE = "grace_told"  # an active license past its end, within its product's grace


class Licenses(Protocol):
    async def add(self, license: License) -> bool:
        """False when the user already has a record for the product."""
        ...
    async def for_user(self, product_id: str, platform_id: str) -> License | None: ...
    async def by_id(self, license_id: str) -> License | None: ...
    async def by_ids(self, license_ids: Collection[str]) -> Mapping[str, License]:
        """The licenses of these ids that exist, by id: one read for a page's worth."""
        ...
    async def by_key_digest(self, digest: str) -> License | None: ...
    async def replace(self, license: License, expected: LicenseState) -> bool:
        """Store `license` only if the stored state is still `expected` (compare and set)."""
        ...
    async def move(self, old: License, expected: LicenseState, new: License) -> bool:
        """A transfer as one change: store `old` (compare and set on `expected`, as
        `replace`) and add `new` (as `add`). False when either fails; the caller then ends
        the unit of work with an error, so nothing of it stays."""
        ...
    async def of_product(
        self, product_id: str, limit: int | None, cursor: str | None
    ) -> Page[License]: ...
    async def library_of(
        self, platform_id: str, limit: int | None, cursor: str | None, now: int | None = None
    ) -> Page[LibraryEntry]:
        """Active licenses only (and, given `now`, not past their end), so the list equals
        what the person can download."""
        ...
    async def hold(self, product_id: str, platform_id: str) -> License | None:
        """The user's license of the product, kept from changing until the unit of work ends,
        so that concurrent changes of one license (renewals, transfers) queue and each sees
        the one before it."""
        ...
    async def due_notices(self, notice: Notice, now: int, limit: int) -> Sequence[License]:
        """Active or paused licenses whose `notice` is due at `now` and was not yet told for
        their `expires_at`, soonest end first: `EXPIRED` once `expires_at` is at or before
        `now`; `EXPIRING` while `now` is before `expires_at` and within the product's
        `reminder_days` of it (never for a product without a reminder)."""
        ...
    async def mark_told(self, license_id: str, notice: Notice, expires_at: int) -> bool:
        """Mark `notice` told for `expires_at`, only if it was not already (one conditional
        update): True for exactly one of any number of concurrent callers."""
        ...
    async def take_trial(self, product_id: str, platform_id: str, now: int) -> bool:
        """Record the person's trial of the product; False when they already took one."""
        ...
    async def remember_purchase(self, product_id: str, purchase_key: str, license_id: str,
                                now: int) -> None:
        """Record that the purchase (`licore.licenses.purchase_key`) gave or found the
        license; a purchase already recorded keeps the license it named first."""
        ...
    async def by_purchase(self, product_id: str, purchase_key: str) -> License | None:
        """The license a recorded purchase names, for as long as it exists."""
        ...


class Alerts(Protocol):
    async def record(self, alert: Alert, window: int) -> Alert:
        """Add `alert`, or bump the count of the row of the same kind, license and place
        (contract 3) last seen within `window` seconds, and return the stored row."""
        ...
    async def of_studio(
        self, studio_id: str, product_id: str | None, limit: int | None, cursor: str | None
    ) -> Page[Alert]: ...
    async def by_id(self, studio_id: str, alert_id: str) -> Alert | None:
        """The studio's alert of that id; None for another studio's."""
        ...


class Blacklist(Protocol):
    async def set(self, studio_id: str, platform_id: str, on: bool, now: int) -> None:
        """Add (keeping the first time it was added) or remove a user."""
        ...
    async def contains(self, studio_id: str, platform_id: str) -> bool: ...
    async def of_studio(self, studio_id: str) -> Sequence[tuple[str, int]]:
        """The studio's blacklisted platform ids with the time each was added, oldest first."""
        ...


class RuntimeRecords(Protocol):
    """What the runtime API remembers per license: used nonces and the places seen."""

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        """False when the nonce was already used for this license and has not expired."""
        ...
    async def record_place(self, license_id: str, game_id: str, now: int) -> int:
        """Record the place (if new) and return its rank: 1 for the license's first place."""
        ...
    async def sweep_nonces(self, now: int) -> int:
        """Delete nonces past their expiry; how many went."""
        ...
    async def places(self, license_id: str) -> Sequence[Place]:
        """The places the license was used from, first first."""
        ...
    async def reset_places(self, license_id: str) -> int:
        """Forget the license's places (the next ones count from 1); how many went."""
        ...


class RateCounters(Protocol):
    async def hit(self, buckets: Sequence[str], window_start: int) -> list[int]:
        """Add one to the counter of each bucket in the window; the new counts, in order."""
        ...
    async def count(self, bucket: str, window_start: int) -> int:
        """The counter of a bucket in a window, without adding to it (0 when never hit)."""
        ...
    async def sweep(self, before: int) -> int:
        """Delete counters of windows that started before `before` (never those of window
        0, which do not expire); how many went."""
        ...


class Outbox(Protocol):
    """The one outbox (docs/events.md): messages written with the change they tell about,
    claimed by workers under a lease so that many processes never send one twice at once."""

    async def add(self, messages: Sequence[Message]) -> None: ...
    async def claim(self, now: int, worker: str, lease_until: int, limit: int,
                    per_studio: int = STUDIO_SLOTS) -> Sequence[Message]:
        """Take the messages `licore.lanes.plan` lets go at `now` (at most `limit`; each the
        oldest pending of its lane, due, unleased, its breaker not holding it; a studio's
        leased ones counted against `per_studio`), leasing them to `worker` until
        `lease_until`; others skip them meanwhile. Claims by concurrent workers never take
        two messages of one lane, nor more than `per_studio` of one studio."""
        ...
    async def breakers(self, lanes: Sequence[str]) -> Mapping[str, Breaker]:
        """The stored breakers of these lanes; a lane without one is closed with no
        failures."""
        ...
    async def save_breaker(self, lane: str, breaker: Breaker) -> None:
        """Store a lane's breaker (the default one is stored by forgetting the lane)."""
        ...
    async def save(self, message: Message, worker: str) -> bool:
        """Store an attempt's outcome; False (nothing stored) when `worker` lost the lease."""
        ...
    async def by_id(self, message_id: str) -> Message | None: ...
    async def of_studio(self, studio_id: str, kind: MessageKind, limit: int | None,
                        cursor: str | None) -> Page[Message]:
        """The studio's messages of a kind, newest first, for the delivery log."""
        ...
    async def requeue(self, message_id: str, now: int) -> bool:
        """Send again by hand: pending and due now, keeping its id. False when unknown."""
        ...
    async def backlog(self, now: int) -> int:
        """Pending messages already due, for the backlog gauge."""
        ...


class Hooks(Protocol):
    """Where messages go: webhook endpoints, the chat roles products earn, chat links."""

    async def add_endpoint(self, endpoint: WebhookEndpoint) -> None: ...
    async def endpoint(self, endpoint_id: str) -> WebhookEndpoint | None: ...
    async def endpoints_of(self, studio_id: str) -> Sequence[WebhookEndpoint]: ...
    async def save_endpoint(self, endpoint: WebhookEndpoint) -> None: ...
    async def remove_endpoint(self, endpoint_id: str) -> bool: ...
    async def set_roles(self, product_id: str, roles: Sequence[ChatRole]) -> None:
        """Replace the product's roles with `roles`."""
        ...
    async def roles_of(self, product_id: str) -> Sequence[ChatRole]: ...
    async def link_chat(self, platform_id: str, chat_user_id: str | None, now: int) -> None:
        """Link (or, with None, unlink) a person's chat account."""
        ...
    async def chat_user(self, platform_id: str) -> str | None: ...
    async def linked_to(self, chat_user_id: str) -> Sequence[str]:
        """The platform ids of the people who linked this chat account (one, normally)."""
        ...
    async def linked_holders(self, product_id: str, after: str | None,
                             limit: int) -> Sequence[License]:
        """Active licenses of the product whose holder linked a chat account, by id after
        `after`: the people a role added to (or removed from) the product concerns."""
        ...


class IdempotencyKeys(Protocol):
    """Idempotency keys and the answers they gave (docs/api.md, "Retrying safely")."""

    async def claim(self, record: IdempotencyRecord, now: int) -> IdempotencyRecord | None:
        """Take the key for this unit of work: None when it was free (never used, or only
        by a record expired at `now`, which is replaced), else the live record. A claim by
        another unit of work still open makes this one wait for it to end (PostgreSQL's
        unique index; SQLite's and the in-memory store's write lock), so a key is never
        claimed twice and the loser reads the winner's answer."""
        ...
    async def keep(self, owner: str, key: str, answer: KeptAnswer) -> None:
        """Store the answer of the key this unit of work claimed."""
        ...
    async def sweep(self, now: int) -> int:
        """Delete records expired at `now`; how many went."""
        ...


class UsageRecords(Protocol):
    """Usage over time (`licore.usage`): calls rolled up per product and hour, and the
    users and places seen. Reads scope to one product, or with `product_id` None to every
    product of the studio; points start at multiples of `step` seconds (UTC)."""

    async def add(self, tally: Tally, shard: int = 0) -> None:
        """Add a batch's rollup, kept only for products that exist; `shard`: see
        `add_hits` (the reads sum the shards)."""
        ...
    async def calls(self, studio_id: str, product_id: str | None, start: int, end: int,
                    step: int) -> Sequence[CallCount]: ...
    async def reach(self, studio_id: str, product_id: str | None, start: int, end: int,
                    step: int) -> Sequence[Reach]:
        """Distinct users and places of each point that has any, and places first seen."""
        ...
    async def count(self, product_id: str, hour: int, kind: str, subject: str = "") -> None:
        """Add one to what happened to the product in the hour (`licore.usage.Happened`)."""
        ...
    async def events(self, studio_id: str, product_id: str | None, start: int, end: int,
                     step: int) -> Sequence[EventCount]: ...
    async def sweep(self, before: int) -> int:
        """Forget the hours before `before`; how many rows went."""
        ...


class RequestRecords(Protocol):
    """What requests leave behind for a while, beside the things they change: the runtime's
    nonces and places, rate counters, idempotency keys, usage rollups. A unit of work's
    `records`."""

    @property
    def runtime(self) -> RuntimeRecords: ...
    @property
    def counters(self) -> RateCounters: ...
    @property
    def idempotency(self) -> IdempotencyKeys: ...
    @property
    def usage(self) -> UsageRecords: ...


class Abuse(Protocol):
    """What a studio sees and decides about misuse: the alerts raised and its blacklist. A
    unit of work's `abuse`."""

    @property
    def alerts(self) -> Alerts: ...
    @property
    def blacklist(self) -> Blacklist: ...


class AuditLog(Protocol):
    """The audit trail (docs/audit.md): written in the unit of work of the change it tells."""

    async def add(self, entry: AuditEntry) -> None: ...
    async def of_studio(self, studio_id: str, where: AuditFilter, limit: int,
                        cursor: str | None) -> Page[AuditEntry]:
        """The studio's entries that `where` lets through, newest first, `limit` of them
        older than the entry `cursor` names."""
        ...
    async def everywhere(self, where: AuditFilter, limit: int,
                         cursor: str | None) -> Page[AuditEntry]:
        """`of_studio` over every entry, any studio's or none's: the operator's view."""
        ...
    async def sweep(self, before: int) -> int:
        """Delete entries made before `before`; how many went."""
        ...


class UnitOfWork(Protocol):
    """Every repository one unit of work reaches; it commits or rolls back as one. The
    aggregates a use case changes are repositories of their own; the records requests leave
    behind and the abuse a studio manages are one bounded context each, reached through it
    (`uow.records.counters`, `uow.abuse.alerts`), so that no port holds more than fifteen."""

    @property
    def accounts(self) -> Accounts: ...
    @property
    def studios(self) -> Studios: ...
    @property
    def clients(self) -> Clients: ...
    @property
    def devices(self) -> DeviceAuthorizations: ...
    @property
    def api_keys(self) -> ApiKeys: ...
    @property
    def products(self) -> Products: ...
    @property
    def versions(self) -> Versions: ...
    @property
    def copies(self) -> PreparedCopies: ...
    @property
    def licenses(self) -> Licenses: ...
    @property
    def abuse(self) -> Abuse: ...
    @property
    def records(self) -> RequestRecords: ...
    @property
    def outbox(self) -> Outbox: ...
    @property
    def hooks(self) -> Hooks: ...
    @property
    def images(self) -> Images: ...
    @property
    def audit(self) -> AuditLog: ...



class Storage(Protocol):
    def unit_of_work(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """One transaction: commits when the block ends normally, rolls back on an
        exception."""
        ...

    async def runtime_read(self, buckets: Sequence[str], window_start: int, key_digest: str,
                           user_id: str, game_id: str | None) -> tuple[list[int], RuntimeFacts]:
        """The runtime hot path's one trip: count the request in `buckets` (as
        `RateCounters.hit`), then load the license the key belongs to, its product, the
        place limit in force (the product's, else the studio's), whether `user_id` is
        blacklisted there, the license's places, and the unlock data of the license's tier.
        Not a unit of work: the counters commit whatever follows; effects use a unit of work."""
        ...

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        """`RuntimeRecords.use_nonce` on the hot path, committed before it returns; concurrent
        calls share one statement."""
        ...

    def note_call(self, call: Call) -> None:
        """Keep a runtime call for the usage rollup. It reaches the database with a later
        runtime batch (within a few seconds), never with a trip of
        its own per call."""
        ...

    async def flush_usage(self) -> None:
        """Write the calls this process kept and has not written yet."""
        ...

    async def migrate(self) -> None: ...

    async def open(self) -> None:
        """Connect now: a server calls it once before serving, so its first requests do not
        race to connect. A database that is away is not an error here; requests answer
        `Unavailable` until it is back."""
        ...

    async def ready(self) -> bool:
        """Whether the database answers right now, known within about a second."""
        ...

    async def close(self) -> None: ...
