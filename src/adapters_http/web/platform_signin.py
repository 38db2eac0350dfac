"""Sign-in with the game platform: OAuth 2.0 authorization code with PKCE (S256) and OpenID
Connect, through Authlib's Starlette client. One adapter of the core's `SignIn` port, beside
local accounts.

The person's `platform_id` is the ID token's `sub`, never typed by anyone. Authlib keeps the
`state`, the `nonce` and the PKCE `code_verifier` of an attempt in the signed session cookie
(the person's own browser; the verifier is useless without the one-minute code the platform
sends to our redirect URI only) and checks them on the way back; the ID token's signature
(from the provider's JWKS), issuer, audience, expiry and nonce are checked before anyone is
signed in. Any failure is a `None` from `identify`: the page says signing in failed.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import Response

from licore.model import Account
from licore.ports import SignIn
from licore.services.signin import Sessions

log = logging.getLogger("licore.web.platform_signin")
# Authlib logs each attempt's PKCE code verifier at DEBUG; keep it out of the logs even when
# the operator turns DEBUG on for licore.
logging.getLogger("authlib").setLevel(logging.INFO)

ROBLOX_ISSUER = "https://apis.roblox.com/oauth/"


@attrs.frozen
class PlatformSignInConfig:
    """The OAuth app the seller or operator registered with the platform (docs/platform.md).
    `issuer` is compared exactly with the ID token's `iss`; the discovery document is read
    from `{issuer}.well-known/openid-configuration` unless `metadata_url` says otherwise."""

    client_id: str
    client_secret: str = attrs.field(repr=False)
    issuer: str = ROBLOX_ISSUER
    metadata_url: str | None = None
    label: str = "Roblox"  # the button reads "Sign in with <label>"
    timeout: float = 10.0  # seconds for each call to the provider

    @property
    def discovery_url(self) -> str:
        if self.metadata_url:
            return self.metadata_url
        return self.issuer.rstrip("/") + "/.well-known/openid-configuration"


class PlatformSignIn:
    def __init__(self, sessions: Sessions, config: PlatformSignInConfig) -> None:
        self.sessions = sessions
        self.config = config
        with warnings.catch_warnings():
            # Authlib 1.9 warns at import that its httpx integration will move to `httpx2`;
            # nothing an operator can act on, and the CLI's errors must stay one line. Its
            # own module turns the warning on when imported, so the filter goes after that.
            import authlib.deprecate  # noqa: F401

            warnings.simplefilter("ignore", DeprecationWarning)
            from authlib.integrations.starlette_client import OAuth
        oauth = OAuth()
        oauth.register(
            name="platform", client_id=config.client_id, client_secret=config.client_secret,
            server_metadata_url=config.discovery_url,
            client_kwargs={"scope": "openid profile", "code_challenge_method": "S256",
                           "timeout": config.timeout,
                           "token_endpoint_auth_method": "client_secret_post"})
        self._app: Any = oauth.create_client("platform")

    @property
    def label(self) -> str:
        return self.config.label

    async def begin(self, request: Request, redirect_uri: str) -> Response:
        """The redirect to the provider's authorize endpoint, the attempt's state, nonce and
        code verifier kept in the session by Authlib."""
        response: Response = await self._app.authorize_redirect(request, redirect_uri)
        return response

    def bound(self, request: Request) -> SignIn:
        """The `SignIn` of one callback: Authlib reads the attempt back from its session."""
        return _Callback(self, request)

    async def identify(self, request: Request) -> Account | None:
        try:
            token = await self._app.authorize_access_token(
                request, claims_options={"iss": {"essential": True,
                                                 "values": [self.config.issuer]}})
        except Exception as error:  # every failure is "not signed in", never a 500
            # The class name only: Authlib's messages may quote what the provider sent.
            log.warning("platform sign-in failed", extra={"reason": type(error).__name__})
            return None
        claims = token.get("userinfo") if isinstance(token, dict) else None
        if not claims:
            log.warning("platform sign-in failed", extra={"reason": "no ID token"})
            return None
        subject = str(claims.get("sub", ""))
        if not subject.isdigit() or len(subject) > 20:
            log.warning("platform sign-in failed", extra={"reason": "subject not a user id"})
            return None
        name = claims.get("preferred_username") or claims.get("name") or ""
        return await self.sessions.platform_account(subject, str(name))


@attrs.frozen
class _Callback:
    method: PlatformSignIn
    request: Request

    async def identify(self, fields: Mapping[str, str]) -> Account | None:
        # The fields are the callback's query (code, state); Authlib reads them from the
        # request itself, together with what it kept in the session.
        return await self.method.identify(self.request)
