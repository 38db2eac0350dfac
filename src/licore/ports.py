"""The Protocols adapters implement. The core reaches time, randomness, secrets and storage
only through these, so a unit test drives it with fakes and no event loop tricks."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, TypeVar

import attrs

from licore.builds.tree import CheckedModel, Model, Sources
from licore.events import Delivered
from licore.images import CleanImage, ImageKind
from licore.model import (
    Account,
    ApiKey,
    License,
    Product,
)

T = TypeVar("T")


class Clock(Protocol):
    def now(self) -> int:
        """Unix seconds."""
        ...

    def now_ms(self) -> int:
        """Unix milliseconds, so ids made in one second still sort by creation."""
        ...


class Randomness(Protocol):
    def token_bytes(self, n: int) -> bytes: ...


class KeyVault(Protocol):
    """License keys at rest (contract 5): encrypted, plus a keyed digest for look-up."""

    def encrypt(self, license_key: str, license_id: str) -> bytes: ...

    def decrypt(self, ciphertext: bytes, license_id: str) -> str: ...

    def lookup_digest(self, license_key: str) -> str: ...

    def encrypt_blob(self, data: bytes, context: str) -> bytes:
        """Anything stored that holds a license key (a buyer's prepared copy, its nodes),
        bound to `context`: no database copy alone reveals a key."""
        ...

    def decrypt_blob(self, sealed: bytes, context: str) -> bytes:
        """What `encrypt_blob` sealed under the same `context`; raises if it was altered or
        belongs elsewhere."""
        ...


class PasswordHasher(Protocol):
    def hash(self, password: str) -> str: ...

    def verify(self, digest: str, password: str) -> bool: ...


class SignIn(Protocol):
    """How a person proves who they are to the web pages. Local accounts (a username and a
    password) are one adapter; a platform single sign-on is another, proving the person from
    the fields its callback carries. Sessions and the failed-attempt limit are not its job."""

    async def identify(self, fields: Mapping[str, str]) -> Account | None:
        """The account these fields prove, or None when they prove nothing."""
        ...


class Ownership(enum.Enum):
    """What the platform answered about a purchase pass. `UNKNOWN` (down, timing out, an
    answer of the wrong shape) is its own value so that no caller can read it as either
    answer: only `OWNED` grants, only `NOT_OWNED` refuses."""

    OWNED = "owned"
    NOT_OWNED = "not_owned"
    UNKNOWN = "unknown"


class NoUser(enum.Enum):
    """Why `Platform.who` has no user to answer."""

    NO_SUCH_USER = "no_such_user"
    UNKNOWN = "unknown"  # the platform did not answer


@attrs.frozen
class PlatformUser:
    id: str
    name: str
    display_name: str


class Platform(Protocol):
    """The game platform's public answers about its users. Failures are values, never
    exceptions: the adapter has already retried what was worth retrying."""

    async def owns_pass(self, platform_id: str, pass_id: str) -> Ownership: ...

    async def who(self, platform_id: str) -> PlatformUser | NoUser: ...


@attrs.frozen
class LibraryEntry:
    license: License
    product: Product
    studio_name: str


@attrs.frozen
class ConnectedApp:
    key: ApiKey
    client_name: str


class ChatService(Protocol):
    """The community-chat service's REST API, acting as the operator's bot."""

    async def set_role(self, guild_id: str, user_id: str, role_id: str,
                       present: bool) -> Delivered:
        """Give (`present`) or take away a member's role."""
        ...

    def authorize_url(self, state: str, redirect_uri: str) -> str:
        """Where a person signs in to the chat service to link their account (OAuth 2.0
        authorization code, scope `identify`)."""
        ...

    async def identify(self, code: str, redirect_uri: str) -> str | None:
        """The chat user id the authorization code proves, or None when it proves nothing."""
        ...


class WebhookSender(Protocol):
    async def send(self, url: str, message_id: str, timestamp: int, body: str,
                   secrets: Sequence[str]) -> Delivered:
        """POST `body` signed (Standard Webhooks) with each secret, `message_id` as the
        `webhook-id`; refuses addresses the operator did not allow."""
        ...

    async def refusal(self, url: str) -> str | None:
        """Why `url` may not receive webhooks (it cannot be read, does not resolve, or
        resolves to a special-purpose address (`licore.addresses`) the operator did not
        allow), or None."""
        ...


class ImageCodec(Protocol):
    """Decodes a seller's upload within `licore.images`' limits and encodes it again
    (docs/web.md, "Product images"): what comes out holds pixels only, no metadata, no
    bytes of the upload. Raises `InvalidRequest` for anything else (not PNG or JPEG, not
    what `declared` says, damaged, bytes before or after the image, too many pixels)."""

    def clean(self, data: bytes, declared: ImageKind | None) -> CleanImage: ...


class Offload(Protocol):
    """Runs CPU-bound work (parsing, protecting, writing a build) off the event loop."""

    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


async def run_inline(fn: Callable[[], T], /) -> T:
    """The Offload for embedders without threads: run it here and now."""
    return fn()


class SingleFlight(Protocol):
    """Runs `fn` once for every caller that asks under the same `key` while it runs: they all
    get its result (or its exception). Work that every caller would otherwise repeat, such as
    a version's node template wanted by many buyers at once, is done once per process."""

    def __call__(self, key: str, fn: Callable[[], Awaitable[T]], /) -> Awaitable[T]: ...


async def run_alone(key: str, fn: Callable[[], Awaitable[T]], /) -> T:
    """The SingleFlight for embedders that make one call at a time."""
    return await fn()


class Compressor(Protocol):
    """Zstandard, for update files whose reader can decompress them natively."""

    def compress(self, data: bytes) -> bytes: ...

    def decompress(self, data: bytes) -> bytes: ...


class UpdateFileStore(Protocol):
    """Where a server keeps update files (licore.update_files) for handing out: named by
    content, written once, never changed. Blocking calls: run them through the Offload."""

    def has(self, name: str) -> bool: ...

    def write(self, name: str, data: bytes) -> None:
        """Keep `data` under `name`, whole or not at all (readers never see part of it)."""
        ...

    def path(self, name: str) -> str:
        """Where the file named `name` is (or would be) on this host."""
        ...


class ModelCodec(Protocol):
    """Roblox model files, binary or XML, told apart by content."""

    def read(self, data: bytes) -> Model:
        """The instance tree, or ModelFormatError with the reason."""
        ...

    def check(self, data: bytes) -> CheckedModel:
        """Refuse, with ModelFormatError, every file `read` refuses (each hostile-input
        limit: size, instances, depth, cycles, referents, decompression), without keeping
        the whole tree: memory stays a small multiple of the file. The format, instance
        count and scripts, for an upload."""
        ...

    def write(self, model: Model) -> bytes:
        """The file, in the format `model.format` names."""
        ...

    def read_sources(self, data: bytes) -> Sources:
        """Only the script sources (and the names on their paths), or ModelFormatError."""
        ...

    def write_sources(self, build: Sources) -> bytes:
        """The file `read_sources` read, with the scripts' sources as `build` now holds
        them and every other part as it was."""
        ...
