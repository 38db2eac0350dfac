"""The limits on what a client may send (spec 2, 4.5 and 8; contract 3 to 5), each written
once. The commands check their fields with these; the OpenAPI document is derived from them
and a test holds the two together.

Lengths count Unicode code points, which is what `len` of a `str` counts (contract 3).
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from licore.errors import InvalidRequest


@attrs.frozen
class Text:
    """A string of `min_len` to `max_len` code points, optionally of a fixed alphabet.

    `shape` words the pattern for people, so a refusal says what would have been right."""

    max_len: int
    min_len: int = 0
    pattern: str | None = None  # a regular expression the whole value must match
    shape: str | None = None

    def check(self, name: str, value: str) -> str:
        if len(value) > self.max_len:
            raise InvalidRequest(f"{name} must be at most {self.max_len:,} characters", name)
        if len(value) < self.min_len:
            raise InvalidRequest(
                f"{name} must not be empty" if self.min_len == 1 else
                f"{name} must be at least {self.min_len} characters", name)
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise InvalidRequest(f"{name} must be {self.shape}", name)
        return value

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        """An attrs validator; None is "not sent" and passes."""
        if value is not None:
            self.check(attribute.name, value)


@attrs.frozen
class WholeNumber:
    """A whole number from `low` to `high`, both included."""

    low: int
    high: int

    def check(self, name: str, value: int) -> int:
        if not self.low <= value <= self.high:
            raise InvalidRequest(
                f"{name} must be a whole number from {self.low:,} to {self.high:,}", name)
        return value

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            self.check(attribute.name, value)


# Products (spec 2 and 8).
TITLE = Text(max_len=80, min_len=1)
TAGLINE = Text(max_len=140)
DESCRIPTION = Text(max_len=5000)
PRICE_CREDIT = WholeNumber(0, 1_000_000)

# Runtime calls (spec 4.5 and 8; contract 5).
NONCE = Text(min_len=16, max_len=128, pattern=r"[A-Za-z0-9]+",
             shape="16 to 128 letters and digits")
RUNTIME_TEXT = Text(min_len=1, max_len=200)  # product_id, key, current, script_name
PLATFORM_ID = Text(min_len=1, max_len=20, pattern=r"[0-9]+", shape="a platform user id")
GAME_ID = Text(min_len=1, max_len=200)
# Which sealed programs an `/unlock` asks the key of: a version id and a key generation,
# as a copy's loader writes them (docs/protection.md, "Keys that move").
SEALED_FOR = Text(min_len=3, max_len=80, pattern=r"[A-Za-z0-9_]{1,64}\.[0-9]{1,9}",
                  shape="a version id and a key generation, as a copy's loader writes them")
# A game pass id on the platform; "" in a settings change clears it (docs/platform.md).
PURCHASE_PASS_ID = Text(min_len=0, max_len=20, pattern=r"[0-9]*", shape="a game pass id (digits)")
STORE_QUERY = Text(max_len=100)
STORE_SORT = Text(min_len=1, max_len=20, pattern=r"title|newest|price|price_desc",
                  shape="one of title, newest, price, price_desc")
HUB_PLACE_ID = Text(min_len=0, max_len=20, pattern=r"[0-9]*", shape="a place id (digits)")
SOURCE = Text(max_len=4 * 1024 * 1024)  # a whole script rides in /verify-source

# Ids a client names (product_id, version_id, ...) and who a license is for (contract 3).
IDENTIFIER = Text(min_len=1, max_len=200)
# The form of a copy answered as nodes (docs/api.md, the download's `nodes`).
NODE_FORM = Text(min_len=1, max_len=7, pattern=r"tagged|compact", shape="tagged or compact")
USERNAME = Text(min_len=1, max_len=64)
# A release channel (licore.releases).
CHANNEL = Text(min_len=1, max_len=20, pattern=r"stable|beta", shape="stable or beta")

# Lists (contract 3, extension).
PAGE_LIMIT = WholeNumber(1, 1000)
CURSOR = Text(min_len=1, max_len=100)
MOMENT = WholeNumber(0, 253_402_300_799)  # unix seconds, up to the year 9999

# Packages (contract 4).
PLACEHOLDER = Text(min_len=4, max_len=64, pattern=r"[A-Za-z0-9_]+",
                   shape="4 to 64 letters, digits or underscores")
VERSION_LABEL = Text(min_len=1, max_len=64, pattern=r"[A-Za-z0-9][A-Za-z0-9._+-]*",
                     shape="1 to 64 letters, digits, dots, dashes, underscores or pluses, "
                           "starting with a letter or digit")
UNLOCK_DATA_BYTES = 64 * 1024  # the seller's unlock payload, as compact JSON

# Device flow (spec 4.1; contract 6): fields of a stock OAuth 2.0 request.
OAUTH_FIELD = Text(max_len=2000)
OAUTH_REQUIRED = Text(min_len=1, max_len=2000)


# An operator-set password: long enough that guessing it past the sign-in lockout is hopeless.
PASSWORD = Text(max_len=1024, min_len=10)
