"""The records licore keeps, as frozen attrs values. Times are unix seconds."""

from __future__ import annotations

import json
from typing import Any, Generic, TypeVar

import attrs

from licore.device_flow import DeviceState
from licore.licenses import LicenseState, PlacePolicy, Source
from licore.protection import DEFAULT_RULES, ProtectionSettings
from licore.releases import Channel
from licore.scopes import KeyKind, Permission


@attrs.frozen
class Account:
    id: str
    platform_id: str
    username: str
    password_digest: str | None
    created_at: int
    # set by the operator (`licore account disable`): no sign-in, no session, no key
    disabled_at: int | None = None


@attrs.frozen
class Studio:
    id: str
    name: str
    owner_account_id: str
    place_limit: int
    created_at: int


@attrs.frozen
class Membership:
    studio_id: str
    account_id: str
    permissions: frozenset[Permission]


@attrs.frozen
class Client:
    id: str
    name: str
    description: str
    scopes: tuple[str, ...]
    disabled: bool
    created_at: int


@attrs.frozen
class DeviceAuthorization:
    id: str
    device_code_digest: str
    user_code: str  # normalized: 8 characters, no hyphen
    client_id: str
    requested_scopes: tuple[str, ...]
    state: DeviceState
    created_at: int
    expires_at: int
    interval: int
    last_poll_at: int | None = None
    granted_scopes: tuple[str, ...] = ()
    studio_id: str | None = None
    account_id: str | None = None


@attrs.frozen
class ApiKey:
    id: str
    digest: str
    kind: KeyKind
    scopes: tuple[str, ...]
    client_id: str
    account_id: str  # the person who approved it
    studio_id: str | None  # set for studio keys
    created_at: int
    last_used_at: int
    revoked_at: int | None = None


@attrs.frozen
class UnlockData:
    """A seller's unlock data: any JSON value, which licore never reads, only seals for the
    buyer (`/unlock`). Kept as the compact JSON text it is sealed as, so a call splices it in
    without parsing and writing it again; `of` is the one way in from a JSON value."""

    text: str = "null"

    @classmethod
    def of(cls, value: Any) -> UnlockData:
        return cls(json.dumps(value, separators=(",", ":"), ensure_ascii=False))

    def value(self) -> Any:
        return json.loads(self.text)


@attrs.frozen
class Product:
    id: str
    studio_id: str
    slug: str
    title: str
    tagline: str
    description: str
    price_credit: int
    discoverable: bool
    licensing_enabled: bool
    created_at: int
    updated_at: int
    current_version_id: str | None = None
    current_version: str | None = None  # label of the live build
    placeholder: str = "LICORE_LICENSE_KEY"
    verify_scripts: bool = False
    unlock_data: UnlockData = UnlockData()  # the seller's sealed `data`
    protection: ProtectionSettings = DEFAULT_RULES  # the seller's rules
    # The platform's game pass whose owners may claim a license (docs/platform.md).
    purchase_pass_id: str | None = None
    # How many places a license may be used from (None: the studio's limit, 3 unless the
    # operator changed it), and what a call from one more place meets.
    place_limit: int | None = None
    place_policy: PlacePolicy = PlacePolicy.ALERT
    trial_days: int | None = None  # None: no trial offered
    # `license.expiring` this many days before a license's end (None: no reminder).
    reminder_days: int | None = None
    # The seller's hub place on the platform, where buyers buy in the game (docs/selling.md);
    # the store's product page links to it.
    hub_place_id: str | None = None
    # The beta channel's build (docs/api.md, "Release channels"): always one published after
    # the live build, since a stable release empties it (`licore.releases`).
    beta_version_id: str | None = None
    beta_version: str | None = None
    # Days a license stays in force past its end (docs/licenses.md, "Grace"); None: none.
    grace_days: int | None = None


@attrs.frozen
class License:
    id: str
    product_id: str
    platform_id: str
    source: Source
    state: LicenseState
    verified_at: int
    created_at: int
    key_ciphertext: bytes | None = None  # AES-256-GCM under the key-encryption key
    key_digest: str | None = None  # keyed digest, to find a license by its key
    key_generation: int = 0  # bumped on every new key, so cached copies of old keys die
    expires_at: int | None = None  # None: never; past it the license is out of force
    tier: str | None = None  # None: the product's own unlock data
    transferred_to: str | None = None  # the platform id it went to, on a transferred-away record
    # The sale it came from, as the seller's hub names it (a developer product's receipt
    # `PurchaseId`, a game pass, a subscription); None for a plain grant.
    purchase_id: str | None = None
    # The release channel the holder follows for this product: their own choice, made in
    # their library; it stays through a re-key and does not pass on a transfer.
    channel: Channel = Channel.STABLE


@attrs.frozen
class Plan:
    """One way a product is sold (docs/licenses.md, "Plans"): a license for `duration_days`
    (None: for good), on `tier` (None: the product's own unlock data). A purchase of a plan
    grants it, or extends a license already held by its duration."""

    product_id: str
    id: str
    name: str
    duration_days: int | None = None
    tier: str | None = None
    position: int = 0  # the seller's order


@attrs.frozen
class Tier:
    """An edition of a product with its own unlock data (sealed by `/unlock`)."""

    product_id: str
    name: str
    unlock_data: UnlockData


@attrs.frozen
class Place:
    """A place (game) a license was used from; `place_rank` 1 is the first."""

    license_id: str
    game_id: str
    first_seen_at: int
    place_rank: int


@attrs.frozen
class Alert:
    id: str
    studio_id: str
    kind: str
    product_id: str
    license_id: str | None
    platform_id: str | None
    key_owner_platform_id: str | None
    game_id: str | None
    script_name: str | None
    count: int
    first_seen_at: int
    last_seen_at: int


T = TypeVar("T")


@attrs.frozen
class Version:
    """A build file of a product. `published` once it went live at least once; the live one
    is the product's `current_version_id`."""

    id: str
    product_id: str
    label: str
    format: str  # "binary" or "xml": what was uploaded, and what downloads return
    size_bytes: int
    sha256: str
    blob_id: str
    published: bool
    created_at: int
    # The channel it was last published to (meaningless while a draft), and when the seller
    # withdrew it (None: never): a withdrawn build is offered and downloadable no more.
    channel: Channel = Channel.STABLE
    withdrawn_at: int | None = None


@attrs.frozen
class VersionScript:
    """A script's source as the seller uploaded it, kept for /verify-source."""

    version_id: str
    position: int
    name: str
    path: str
    source: bytes


@attrs.frozen
class Page(Generic[T]):
    """One page of a list: the items and the cursor of the next page (None at the end)."""

    items: tuple[T, ...]
    next_cursor: str | None


@attrs.frozen
class KeptAnswer:
    """An answer kept for an idempotency key, to be replayed byte for byte."""

    status: int
    media_type: str
    body: bytes


@attrs.frozen
class IdempotencyRecord:
    """A request's idempotency key, kept with the answer its first run gave.

    `owner` is who the key belongs to (`studio:<id>` or `person:<id>`), so two studios'
    keys never meet; `fingerprint` says which request it was (method, path, query, body)."""

    owner: str
    key: str
    fingerprint: str
    created_at: int
    expires_at: int
    answer: KeptAnswer | None = None  # None only inside the unit of work that claimed it
