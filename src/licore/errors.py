"""The error vocabulary of the specification (section 7), one class a code.

Every error carries the HTTP status the specification gives it, so the HTTP edge turns any of
them into `{ error, error_description }` without a lookup table of its own. Descriptions are
written for people and never contain a secret.
"""

from __future__ import annotations

from typing import ClassVar

MAX_DESCRIPTION = 500  # characters of a description, whatever client text it quotes


def _allowed(ch: str) -> bool:
    # RFC 6749 section 5.2: error_description is %x20-21 / %x23-5B / %x5D-7E.
    return " " <= ch <= "~" and ch not in '"\\'


def printable(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """`text` fit for an `error_description` (and the `WWW-Authenticate` header that quotes
    it): a character RFC 6749 section 5.2 does not allow is written as its code point
    (`"` as `U+0022`), and the text is cut to `limit` characters."""
    if not (text.isascii() and text.isprintable() and '"' not in text and "\\" not in text):
        text = "".join(ch if _allowed(ch) else f"U+{ord(ch):04X}" for ch in text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class LicoreError(Exception):
    code: ClassVar[str] = "server_error"
    status: ClassVar[int] = 500

    def __init__(self, description: str = "") -> None:
        # Made safe here, where every error of every interface is born, so no edge that
        # turns errors into bodies or headers can echo a client's text as it came.
        self.description = printable(description or self.code.replace("_", " "))
        super().__init__(self.description if description else self.code)


class InvalidRequest(LicoreError):
    code = "invalid_request"
    status = 400

    def __init__(self, description: str, field: str | None = None) -> None:
        super().__init__(description)
        self.field = field


class InvalidToken(LicoreError):
    code = "invalid_token"
    status = 401


class InsufficientScope(LicoreError):
    code = "insufficient_scope"
    status = 403

    def __init__(self, description: str, scope: str | None = None) -> None:
        super().__init__(description)
        self.scope = scope


class NotFound(LicoreError):
    code = "not_found"
    status = 404


class AlreadyOwned(LicoreError):
    code = "already_owned"
    status = 409


class AlreadyExists(LicoreError):
    code = "already_exists"
    status = 409


class PayloadTooLarge(LicoreError):
    code = "payload_too_large"
    status = 413


class RateLimited(LicoreError):
    code = "rate_limited"
    status = 429

    def __init__(self, retry_after: int, limit: int | None = None) -> None:
        super().__init__(f"too many requests; retry after {retry_after} seconds")
        self.retry_after = retry_after
        self.limit = limit


# Idempotency keys (extension, docs/api.md "Retrying safely").


class IdempotencyKeyReused(LicoreError):
    """The key already answered a different request (another body, path or method): the
    client mixed up its keys, and replaying the first answer for it would be a lie."""

    code = "idempotency_key_reused"
    status = 422


# Purchase-pass claims (extension, docs/platform.md).


class PassNotOwned(LicoreError):
    # 409, not 403: the key may do this; the platform's record of the person is what
    # conflicts (and a 403 of the Partner API always names a missing scope).
    code = "pass_not_owned"
    status = 409


class LicenseRevoked(LicoreError):
    # 409 for the same reason as `pass_not_owned`: the key may ask; what conflicts is the
    # seller's revoke, which a claim never undoes. A code of its own, so that an app can
    # tell the buyer to contact the seller rather than to try again.
    code = "license_revoked"
    status = 409


class PlatformUnavailable(LicoreError):
    """The platform did not answer (down, timing out, rate limiting us): nothing was granted
    and nothing was refused; the person may try again later."""

    code = "platform_unavailable"
    status = 503

    def __init__(self, description: str, retry_after: int = 30) -> None:
        super().__init__(description)
        self.retry_after = retry_after


class ServerError(LicoreError):
    code = "server_error"
    status = 500


class Unavailable(LicoreError):
    """The database cannot be reached right now; nothing was done. Retry after a moment."""

    code = "temporarily_unavailable"
    status = 503

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the service cannot reach its database; retry in {retry_after} "
                         "seconds")
        self.retry_after = retry_after


class Contended(Unavailable):
    """The database rolled the request's transaction back because a concurrent one held
    what it needed (a deadlock, a serialization failure). The database is well and nothing
    was done: a retry soon succeeds."""

    def __init__(self, retry_after: int = 1) -> None:
        super().__init__(retry_after)
        self.description = (f"the database turned this request back because a concurrent "
                            f"request held what it needed; nothing was done; retry in "
                            f"{retry_after} seconds")


class KeyUnreadable(Unavailable):
    """A stored key (a license key, a webhook secret, a prepared copy) does not open under
    this process's key-encryption key: the server is misconfigured (another `LICORE_KEK`,
    a database restored from another install) or the row was altered. Nothing was done;
    the answer is a 503 for the operator to fix, never a 500 or a silent wrong answer."""

    def __init__(self) -> None:
        super().__init__(60)
        self.description = ("the service cannot open a stored key; its operator has to "
                            "fix its key-encryption key")


# The device flow (RFC 8628 shaped): status 400 unless marked.


class InvalidClient(LicoreError):
    code = "invalid_client"
    status = 400


class InvalidScope(LicoreError):
    code = "invalid_scope"
    status = 400


class UnsupportedGrantType(LicoreError):
    code = "unsupported_grant_type"
    status = 400


class AuthorizationPending(LicoreError):
    code = "authorization_pending"
    status = 400


class SlowDown(LicoreError):
    code = "slow_down"
    status = 400

    def __init__(self, interval: int) -> None:
        super().__init__(f"polling too fast; wait {interval} seconds between polls")
        self.interval = interval


class AccessDenied(LicoreError):
    code = "access_denied"
    status = 400


class ExpiredToken(LicoreError):
    code = "expired_token"
    status = 400


class ClientDisabled(LicoreError):
    """An approval (or its consent page) for an app the operator has disabled."""

    code = "access_denied"
    status = 403


class ApprovalRefused(LicoreError):
    """Approval where no requested scope survives the approver's permissions (spec 3, 5)."""

    code = "access_denied"
    status = 403
