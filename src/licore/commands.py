"""What a caller asks a use case to do, as small frozen values.

A command is checked when it is made: a field out of its bounds (`licore.bounds`) raises
`InvalidRequest` naming the field, so a use case only ever sees a well-formed request. The
HTTP adapter makes commands from JSON bodies and query strings; the web pages make the same
commands from their forms. `None` in an optional field means "not sent".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NewType

import attrs

from licore import bounds
from licore.errors import InvalidRequest
from licore.licenses import LicenseEvent, Source
from licore.protection import ProtectionSettingsError, parse_protection_settings
from licore.runtime import Caller

# A value the specification lets a client send as a JSON string or number ("`user_id` is a
# string or number", spec 4.5), held as its decimal text.
NumberOrText = NewType("NumberOrText", str)


@attrs.frozen
class JsonValue:
    """A JSON value a seller chose (unlock data, protection rules), `null` included; kept as
    parsed. Wrapped so that "sent as null" and "not sent" (None) stay apart."""

    value: Any


# Lists (contract 3, extension) ------------------------------------------------------------


@attrs.frozen
class Paging:
    """`limit` and `cursor` of a list. Without `limit` the whole list is answered."""

    limit: int | None = attrs.field(default=None, validator=bounds.PAGE_LIMIT)
    cursor: str | None = attrs.field(default=None, validator=bounds.CURSOR)


# Products (spec 4.2) ----------------------------------------------------------------------


@attrs.frozen
class ListProducts:
    page: Paging = Paging()


@attrs.frozen
class CreateProduct:
    title: str = attrs.field(validator=bounds.TITLE)
    tagline: str | None = attrs.field(default=None, validator=bounds.TAGLINE)
    description: str | None = attrs.field(default=None, validator=bounds.DESCRIPTION)
    price_credit: int | None = attrs.field(default=None, validator=bounds.PRICE_CREDIT)
    # A create that sends `discoverable` is still a draft (spec 3): the field is accepted
    # (and must be a boolean) but changes nothing.
    discoverable: bool | None = None


@attrs.frozen
class ChangeProduct:
    """Only the fields sent are changed (spec 4.2)."""

    id: str = attrs.field(validator=bounds.IDENTIFIER)
    title: str | None = attrs.field(default=None, validator=bounds.TITLE)
    tagline: str | None = attrs.field(default=None, validator=bounds.TAGLINE)
    description: str | None = attrs.field(default=None, validator=bounds.DESCRIPTION)
    price_credit: int | None = attrs.field(default=None, validator=bounds.PRICE_CREDIT)
    discoverable: bool | None = None


# Licenses (spec 4.3, contract 3) ----------------------------------------------------------


# A chat account's id as the chat service gives it (a Discord snowflake): digits.
CHAT_USER = bounds.Text(min_len=1, max_len=20, pattern=r"[0-9]+", shape="digits")


def _user(instance: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is None:  # only where the field is optional (a listing's filter)
        return
    bounds.IDENTIFIER.check(attribute.name, value)
    if not value.isdigit() and len(value) > bounds.USERNAME.max_len:
        raise InvalidRequest("user must be a username or a numeric platform id", "user")


def _target_user(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """A target's `user`; "" is "not sent", when `chat_user` names the holder instead."""
    if value != "":
        _user(instance, attribute, value)


@attrs.frozen
class LicenseTarget:
    """One user's license of one product. `user` is a numeric platform id when all digits,
    else a username (contract 3)."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    user: str = attrs.field(default="", validator=_target_user)  # or `chat_user`
    # Extension (docs/licenses.md, "By chat account"): the person whose linked chat account
    # has this id, in place of `user`.
    chat_user: str | None = attrs.field(default=None, validator=CHAT_USER)

    def __attrs_post_init__(self) -> None:
        if (self.user == "") == (self.chat_user is None):
            raise InvalidRequest("send user or chat_user, one of them", "user")


@attrs.frozen
class ChangeLicense:
    """Grant, revoke, pause or resume: one event of the license table (`licore.licenses`)."""

    target: LicenseTarget
    event: LicenseEvent
    source: Source = Source.GRANT


@attrs.frozen
class ListLicenses:
    """`user` (extension): only that user's license, a username or a numeric platform id as
    everywhere else."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    page: Paging = Paging()
    user: str | None = attrs.field(default=None, validator=_user)
    chat_user: str | None = attrs.field(default=None, validator=CHAT_USER)

    def __attrs_post_init__(self) -> None:
        if self.user and self.chat_user is not None:
            raise InvalidRequest("send user or chat_user, not both", "user")


@attrs.frozen
class ListAlerts:
    # None: the alerts of the whole studio.
    product_id: str | None = attrs.field(default=None, validator=bounds.IDENTIFIER)
    page: Paging = Paging()


# Library (spec 4.4) -----------------------------------------------------------------------


@attrs.frozen
class BrowseStore:
    """The store's listing: the products whose title, tagline or studio holds every word of
    `q` (case and accents aside), in the `sort` order."""

    q: str = attrs.field(default="", validator=bounds.STORE_QUERY)
    sort: str = attrs.field(default="title", validator=bounds.STORE_SORT)


@attrs.frozen
class ListLibrary:
    page: Paging = Paging()


@attrs.frozen
class ListLibraryVersions:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    page: Paging = Paging()


@attrs.frozen
class DownloadCopy:
    """The live build, or the published version `version_id`, as the buyer's own copy."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    version_id: str | None = attrs.field(default=None, validator=bounds.IDENTIFIER)
    # Extension: the same copy as /update-style nodes (docs/instances.md), "tagged" or
    # "compact", for a client that cannot read the model file (the Studio installer's
    # fallback, docs/sdk.md); None, the default, is the file itself.
    nodes: str | None = attrs.field(default=None, validator=bounds.NODE_FORM)


@attrs.frozen
class FollowChannel:
    """Extension (docs/api.md, "Release channels"): the release channel the person follows
    for a product they hold: `beta` opts in to beta builds, `stable` opts out."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    channel: str = attrs.field(validator=bounds.CHANNEL)


@attrs.frozen
class ClaimPurchase:
    """Extension (docs/platform.md): "I bought this" for one product. The platform is asked
    whether the person owns the product's purchase pass."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)


# Packages (contract 4) --------------------------------------------------------------------


@attrs.frozen
class ListPackages:
    page: Paging = Paging()


@attrs.frozen
class ListPackageVersions:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    page: Paging = Paging()


@attrs.frozen
class UploadVersion:
    """A new draft version. The file is checked by parsing in the use case, where the model
    codec is; its size against the operator's limit there too."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    version: str = attrs.field(validator=bounds.VERSION_LABEL)  # the new label
    data: bytes = attrs.field(repr=False)


@attrs.frozen
class PublishVersion:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    version_id: str = attrs.field(validator=bounds.IDENTIFIER)
    # Extension (docs/api.md, "Release channels"): `stable`, the default, makes it the
    # live version; `beta` makes it the beta channel's build.
    channel: str = attrs.field(default="stable", validator=bounds.CHANNEL)


@attrs.frozen
class WithdrawVersion:
    """Extension (docs/api.md): the build is offered and downloadable no more."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    version_id: str = attrs.field(validator=bounds.IDENTIFIER)


def _unlock_data(instance: object, attribute: attrs.Attribute[Any],
                 value: JsonValue | None) -> None:
    if value is not None and len(compact_json(value).encode()) > bounds.UNLOCK_DATA_BYTES:
        raise InvalidRequest(
            f"unlock_data must be at most {bounds.UNLOCK_DATA_BYTES} bytes of JSON",
            "unlock_data")


def compact_json(value: JsonValue) -> str:
    return json.dumps(value.value, separators=(",", ":"), ensure_ascii=False)


def _protection(instance: object, attribute: attrs.Attribute[Any],
                value: JsonValue | None) -> None:
    """The rules' own schema (docs/protection.md); whether they apply to the live build is
    the use case's to find out."""
    if value is not None:
        try:
            parse_protection_settings(value.value)
        except ProtectionSettingsError as error:
            raise InvalidRequest(f"{error.field}: {error.reason}", error.field) from None


@attrs.frozen
class ChangeSettings:
    """The placeholder token, "Verify scripts", the unlock payload and the protection rules
    (checked by `licore.protection` in the use case). Only the fields sent change."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    placeholder: str | None = attrs.field(default=None, validator=bounds.PLACEHOLDER)
    verify_scripts: bool | None = None
    unlock_data: JsonValue | None = attrs.field(default=None, validator=_unlock_data)
    protection: JsonValue | None = attrs.field(default=None, validator=_protection)
    # Extension (docs/platform.md): the game pass whose owners may claim the product, as
    # digits (a JSON number is taken too); "" clears it.
    purchase_pass_id: NumberOrText | None = attrs.field(default=None,
                                                        validator=bounds.PURCHASE_PASS_ID)
    # Extension (docs/selling.md): the seller's hub place the store links to; "" clears it.
    hub_place_id: NumberOrText | None = attrs.field(default=None, validator=bounds.HUB_PLACE_ID)


# Runtime (spec 4.5) -----------------------------------------------------------------------


@attrs.frozen
class Check:
    """POST /check."""

    user_id: NumberOrText = attrs.field(validator=bounds.PLATFORM_ID)
    product_id: str = attrs.field(validator=bounds.RUNTIME_TEXT)
    key: str = attrs.field(validator=bounds.RUNTIME_TEXT, repr=False)
    game_id: NumberOrText | None = attrs.field(default=None, validator=bounds.GAME_ID)

    @property
    def caller(self) -> Caller:
        return Caller(self.user_id, self.product_id, self.key, self.game_id)


@attrs.frozen
class Unlock:
    """POST /unlock."""

    user_id: NumberOrText = attrs.field(validator=bounds.PLATFORM_ID)
    product_id: str = attrs.field(validator=bounds.RUNTIME_TEXT)
    key: str = attrs.field(validator=bounds.RUNTIME_TEXT, repr=False)
    nonce: str = attrs.field(validator=bounds.NONCE)
    game_id: NumberOrText | None = attrs.field(default=None, validator=bounds.GAME_ID)
    # licore's extension: the sealed programs the game is about to open (their version and
    # key generation); without it the payload's `sealed` is the license's first-form key.
    sealed_for: str | None = attrs.field(default=None, validator=bounds.SEALED_FOR)

    @property
    def caller(self) -> Caller:
        return Caller(self.user_id, self.product_id, self.key, self.game_id)


@attrs.frozen
class AskVersion:
    """POST /version. `current` is the label the caller holds, if it said."""

    user_id: NumberOrText = attrs.field(validator=bounds.PLATFORM_ID)
    product_id: str = attrs.field(validator=bounds.RUNTIME_TEXT)
    key: str = attrs.field(validator=bounds.RUNTIME_TEXT, repr=False)
    current: str | None = attrs.field(default=None, validator=bounds.RUNTIME_TEXT)
    # Extension (docs/runtime.md, "Release channels"): None, as the specification's
    # callers send, is stable.
    channel: str | None = attrs.field(default=None, validator=bounds.CHANNEL)

    @property
    def caller(self) -> Caller:
        return Caller(self.user_id, self.product_id, self.key)


@attrs.frozen
class Update:
    """POST /update."""

    user_id: NumberOrText = attrs.field(validator=bounds.PLATFORM_ID)
    product_id: str = attrs.field(validator=bounds.RUNTIME_TEXT)
    key: str = attrs.field(validator=bounds.RUNTIME_TEXT, repr=False)
    nonce: str = attrs.field(validator=bounds.NONCE)
    current: str | None = attrs.field(default=None, validator=bounds.RUNTIME_TEXT)
    # The form of the nodes (docs/instances.md): "tagged", the default, or "compact".
    nodes: str = attrs.field(default="tagged",
                             validator=attrs.validators.in_(("tagged", "compact")))
    channel: str | None = attrs.field(default=None, validator=bounds.CHANNEL)  # as /version's
    # Extension (docs/runtime.md, "Updates as files"): "file" asks for the update as a file;
    # None or "sealed", as the specification's callers send, for the nodes sealed inline.
    delivery: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(
            ("sealed", "file"))))
    # With "file": "zstd" asks for the file compressed before it is encrypted, for a game
    # server that decompresses natively (EncodingService); None: not compressed.
    compression: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(("zstd",))))

    @property
    def caller(self) -> Caller:
        return Caller(self.user_id, self.product_id, self.key)


@attrs.frozen
class VerifySource:
    """POST /verify-source. `source` is compared byte for byte, so it is kept as sent."""

    user_id: NumberOrText = attrs.field(validator=bounds.PLATFORM_ID)
    product_id: str = attrs.field(validator=bounds.RUNTIME_TEXT)
    key: str = attrs.field(validator=bounds.RUNTIME_TEXT, repr=False)
    script_name: str = attrs.field(validator=bounds.RUNTIME_TEXT)
    source: str = attrs.field(validator=bounds.SOURCE, repr=False)

    @property
    def caller(self) -> Caller:
        return Caller(self.user_id, self.product_id, self.key)


# Device flow (spec 4.1, contract 6) -------------------------------------------------------


@attrs.frozen
class StartAuthorization:
    """POST /device/code. `client_id` may instead come by HTTP Basic client authentication
    (contract 6), so it may be missing here."""

    scope: str = attrs.field(validator=bounds.OAUTH_REQUIRED)
    client_id: str | None = attrs.field(default=None, validator=bounds.OAUTH_FIELD)


@attrs.frozen
class PollToken:
    """POST /device/token."""

    device_code: str = attrs.field(validator=bounds.OAUTH_REQUIRED, repr=False)
    grant_type: str | None = attrs.field(default=None, validator=bounds.OAUTH_FIELD)
    client_id: str | None = attrs.field(default=None, validator=bounds.OAUTH_FIELD)


@attrs.frozen
class RevokeToken:
    """POST /revoke in the RFC 7009 shape (extension): the token in the body."""

    token: str = attrs.field(validator=bounds.OAUTH_REQUIRED, repr=False)


# Events leaving the service (docs/events.md, an extension) ---------------------------------


def _topics(instance: object, attribute: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
    from licore.events import TOPICS

    if not value:
        raise InvalidRequest("events must name at least one event type", attribute.name)
    unknown = [t for t in value if t not in TOPICS]
    if unknown:
        raise InvalidRequest(f"unknown event type {unknown[0]!r}; known: "
                             f"{', '.join(TOPICS)}", attribute.name)


def _webhook_url(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if len(value) > 2000 or not value.startswith(("https://", "http://")) or " " in value:
        raise InvalidRequest("url must be an http:// or https:// address of at most 2000 "
                             "characters", attribute.name)


def _snowflake(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not (value.isdigit() and 1 <= len(value) <= 20):
        raise InvalidRequest(f"{attribute.name} must be a chat id (digits)", attribute.name)


def _texts(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _role_names(value: Iterable[RoleName]) -> tuple[RoleName, ...]:
    return tuple(value)


@attrs.frozen
class AddWebhook:
    url: str = attrs.field(validator=_webhook_url)
    events: tuple[str, ...] = attrs.field(converter=_texts, validator=_topics)


@attrs.frozen
class WebhookTarget:
    id: str = attrs.field(validator=bounds.IDENTIFIER)


@attrs.frozen
class ListDeliveries:
    page: Paging = Paging()


@attrs.frozen
class RoleName:
    guild_id: str = attrs.field(validator=_snowflake)
    role_id: str = attrs.field(validator=_snowflake)


@attrs.frozen
class ChatRolesOf:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)


def _few_roles(instance: object, attribute: attrs.Attribute[Any], value: tuple[Any, ...]
               ) -> None:
    if len(value) > 25:
        raise InvalidRequest("a product earns at most 25 chat roles", attribute.name)


@attrs.frozen
class SetChatRoles:
    """The whole list of roles owning the product earns (an empty list removes them)."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    roles: tuple[RoleName, ...] = attrs.field(converter=_role_names, validator=_few_roles)


# The audit trail (docs/audit.md, an extension) --------------------------------------------

@attrs.frozen
class ListAudit:
    """`action` an action or its family (`license`), `actor` an actor's kind, id or key id,
    `subject` a subject's type or id; `since` and `until` unix seconds, both inclusive."""

    action: str | None = attrs.field(default=None, validator=bounds.IDENTIFIER)
    actor: str | None = attrs.field(default=None, validator=bounds.IDENTIFIER)
    subject: str | None = attrs.field(default=None, validator=bounds.IDENTIFIER)
    since: int | None = attrs.field(default=None, validator=bounds.MOMENT)
    until: int | None = attrs.field(default=None, validator=bounds.MOMENT)
    page: Paging = Paging()
