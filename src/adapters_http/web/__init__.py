"""The server-rendered web pages: sign-in, the approval page, the seller dashboard, a
person's own pages and the storefront. Jinja2 templates, no script, no build step."""

from __future__ import annotations

import secrets

import attrs
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount, Route

from adapters_http.web import (
    approval,
    dashboard,
    guides,
    image_files,
    person_pages,
    signin_pages,
)
from adapters_http.web.platform_signin import PlatformSignIn, PlatformSignInConfig
from adapters_http.web.render import PageHeaders, stylesheet
from adapters_http.web.session import COOKIE, MAX_AGE, SiteSessions
from licore.ports import SignIn
from licore.services.settings import Settings
from licore.services.wiring import UseCases

__all__ = ["PlatformSignInConfig", "WebConfig", "mount"]


@attrs.frozen
class WebConfig:
    """What the composition root decides for the pages: the key that signs session cookies
    (shared by every process serving them) and how people sign in."""

    session_key: bytes = attrs.field(factory=lambda: secrets.token_bytes(32), repr=False)
    sign_in: SignIn | None = None  # None: local accounts (`Sessions.local`)
    # Sign-in with the platform beside local accounts (docs/platform.md); None: not offered.
    platform_sign_in: PlatformSignInConfig | None = None


def mount(uc: UseCases, settings: Settings, config: WebConfig) -> Mount:
    """Every page, under one session middleware. Mounted last, at the root, so the API
    routes before it keep their paths and their JSON answers."""
    method = config.sign_in or uc.sessions.local
    platform = (PlatformSignIn(uc.sessions, config.platform_sign_in)
                if config.platform_sign_in is not None else None)
    routes: list[BaseRoute] = [
        Route("/assets/web.css", stylesheet),
        *signin_pages.routes(uc.sessions, settings, method, platform,
                             signin_pages.FirstAccount(uc.operator.accounts)),
        *approval.routes(uc),
        *dashboard.routes(uc, settings),
        *image_files.routes(uc.images),
        *person_pages.routes(uc, settings),
        *guides.routes(uc.sessions),
    ]
    secure = settings.public_url.lower().startswith("https:")
    return Mount("", routes=routes, middleware=[
        Middleware(PageHeaders),
        Middleware(SiteSessions, secret_key=config.session_key.hex(),
                   session_cookie=COOKIE, max_age=MAX_AGE, same_site="lax",
                   https_only=secure),
    ])
