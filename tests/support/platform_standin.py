"""A stand-in of the game platform as a real HTTP server on loopback: the inventory and users
APIs, and an OpenID provider issuing RS256 ID tokens signed with a key generated here.

Shapes follow the platform's public documentation (docs/platform.md cites it):
- `GET /v1/users/{userId}/items/GamePass/{passId}` -> `{"previousPageCursor", "nextPageCursor",
  "data": [{"type": "GamePass", "id", "name", "instanceId"}]}`, `data` empty when not owned;
- `GET /v1/users/{userId}` -> `{"id", "name", "displayName", ...}`, 404 for no such user;
- `GET /oauth/.well-known/openid-configuration`, `GET /oauth/v1/authorize`,
  `POST /oauth/v1/token`, `GET /oauth/v1/certs` (authorization code with PKCE S256).

A test steers it through attributes (who owns what, failures to answer with, how the next
ID token goes wrong) and reads what it was asked in `calls`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
from joserfc import jwt
from joserfc.jwk import RSAKey

CLIENT_ID = "4242424242"
CLIENT_SECRET = "standin-client-secret-" + "s" * 20


@functools.cache
def _signing_key() -> RSAKey:
    """One generated key for the test run: making RSA keys is slow."""
    return RSAKey.generate_key(2048, parameters={"kid": "standin-1", "use": "sig",
                                                 "alg": "RS256"})


@attrs.define
class Grant:
    client_id: str
    redirect_uri: str
    nonce: str | None
    challenge: str | None
    sub: str


@attrs.define
class Platform:
    """The stand-in's state; the server thread reads it for each request."""

    url: str = ""
    owners: set[tuple[str, str]] = attrs.field(factory=set)  # (user id, pass id)
    users: dict[str, str] = attrs.field(factory=dict)  # user id -> name
    # Failures: the next `fail_count` inventory calls answer `fail_status` (with Retry-After
    # `retry_after` when set); `fail_count` < 0 fails every call.
    fail_status: int = 503
    fail_count: int = 0
    retry_after: str | None = None
    calls: list[str] = attrs.field(factory=list)
    # A hanging platform: while `hanging` is set, inventory and user calls are held without
    # an answer until `released` is set (the stand-in sets it when it stops).
    hanging: bool = False
    released: threading.Event = attrs.field(factory=threading.Event)
    # OpenID provider
    signed_in_as: str = ""  # the user the provider "signs in" at the authorize endpoint
    deny: bool = False  # the person presses Cancel: error=access_denied
    token_fault: str | None = None  # tamper, foreign_key, wrong_aud, wrong_iss, expired, ...
    key: RSAKey = attrs.field(factory=lambda: _signing_key())
    grants: dict[str, Grant] = attrs.field(factory=dict)
    # Every secret of a sign-in the provider saw: codes, verifiers and tokens, so a test can
    # look for each one where it must not be.
    secrets_seen: list[str] = attrs.field(factory=list)
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    @property
    def issuer(self) -> str:
        return f"{self.url}/oauth/"

    def own(self, user_id: str, pass_id: str) -> None:
        self.owners.add((user_id, pass_id))

    def fail(self, status: int, count: int, retry_after: str | None = None) -> None:
        self.fail_status, self.fail_count, self.retry_after = status, count, retry_after

    def inventory_calls(self) -> int:
        return sum(1 for c in self.calls if "/items/GamePass/" in c)

    # -- answers ---------------------------------------------------------------------------

    def take_failure(self) -> bool:
        with self.lock:
            if self.fail_count == 0:
                return False
            if self.fail_count > 0:
                self.fail_count -= 1
            return True

    def discovery(self) -> dict[str, Any]:
        base = f"{self.url}/oauth"
        return {"issuer": self.issuer, "authorization_endpoint": f"{base}/v1/authorize",
                "token_endpoint": f"{base}/v1/token", "userinfo_endpoint": f"{base}/v1/userinfo",
                "jwks_uri": f"{base}/v1/certs", "revocation_endpoint": f"{base}/v1/token/revoke",
                "scopes_supported": ["openid", "profile"],
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256", "RS256"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post",
                                                          "client_secret_basic"]}

    def id_token(self, grant: Grant) -> str:
        now = int(time.time())
        name = self.users.get(grant.sub, f"user{grant.sub}")
        claims: dict[str, Any] = {
            "iss": self.issuer, "sub": grant.sub, "aud": grant.client_id, "iat": now,
            "exp": now + 3600, "name": name, "nickname": name, "preferred_username": name,
            "created_at": now - 86400}
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        fault = self.token_fault
        key = self.key
        if fault == "wrong_aud":
            claims["aud"] = "someone-else"
        elif fault == "wrong_iss":
            claims["iss"] = "https://evil.example/oauth/"
        elif fault == "expired":
            claims["iat"], claims["exp"] = now - 7200, now - 3600
        elif fault == "wrong_nonce":
            claims["nonce"] = "not-the-nonce"
        elif fault == "foreign_key":
            key = RSAKey.generate_key(2048, parameters={"kid": "standin-1"})
        token = jwt.encode({"alg": "RS256", "kid": "standin-1"}, claims, key)
        if fault == "tamper":
            # Another user's id in the payload, the original signature kept.
            head, body, sig = token.split(".")
            payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
            payload["sub"] = "1"
            forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=")
            token = f"{head}.{forged.decode()}.{sig}"
        return token


def _handler(platform: Platform) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def answer(self, status: int, body: Any = None,
                   headers: dict[str, str] | None = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def redirect(self, location: str) -> None:
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            path, query = parts.path, parse_qs(parts.query)
            platform.calls.append(f"GET {path}")
            segments = path.strip("/").split("/")
            if platform.hanging and segments[:2] == ["v1", "users"]:
                platform.released.wait(60)
                return
            if len(segments) == 6 and segments[:2] == ["v1", "users"] and \
                    segments[3:5] == ["items", "GamePass"]:
                self.inventory(segments[2], segments[5])
            elif len(segments) == 3 and segments[:2] == ["v1", "users"]:
                user = segments[2]
                if user in platform.users:
                    name = platform.users[user]
                    self.answer(200, {"description": "", "created": "2020-01-01T00:00:00Z",
                                      "isBanned": False, "externalAppDisplayName": None,
                                      "hasVerifiedBadge": False, "id": int(user),
                                      "name": name, "displayName": name.title()})
                else:
                    self.answer(404, {"errors": [{"code": 3, "message":
                                                  "The user id is invalid."}]})
            elif path == "/oauth/.well-known/openid-configuration":
                self.answer(200, platform.discovery())
            elif path == "/oauth/v1/certs":
                self.answer(200, {"keys": [platform.key.as_dict(private=False)]})
            elif path == "/oauth/v1/authorize":
                self.authorize({k: v[0] for k, v in query.items()})
            else:
                self.answer(404, {"errors": [{"code": 0, "message": "NotFound"}]})

        def inventory(self, user: str, pass_id: str) -> None:
            if platform.take_failure():
                headers = {"Retry-After": platform.retry_after} if platform.retry_after else {}
                self.answer(platform.fail_status, {"errors": [{"code": 0, "message":
                                                               "TooManyRequests"}]}, headers)
                return
            owned = (user, pass_id) in platform.owners
            data = [{"type": "GamePass", "id": int(pass_id), "name": "Pass",
                     "instanceId": None}] if owned else []
            self.answer(200, {"previousPageCursor": None, "nextPageCursor": None,
                              "data": data})

        def authorize(self, q: dict[str, str]) -> None:
            redirect_uri, state = q.get("redirect_uri", ""), q.get("state", "")
            if q.get("client_id") != CLIENT_ID or q.get("response_type") != "code" or \
                    "openid" not in q.get("scope", "").split():
                self.answer(400, {"error": "invalid_request"})
                return
            if platform.deny:
                answer = urlencode({"error": "access_denied", "state": state})
                self.redirect(f"{redirect_uri}?{answer}")
                return
            code = secrets.token_urlsafe(24)
            platform.secrets_seen.append(code)
            platform.grants[code] = Grant(CLIENT_ID, redirect_uri, q.get("nonce"),
                                          q.get("code_challenge"), platform.signed_in_as)
            answer = urlencode({"code": code, "state": state})
            self.redirect(f"{redirect_uri}?{answer}")

        def do_POST(self) -> None:
            platform.calls.append(f"POST {self.path}")
            if urlsplit(self.path).path != "/oauth/v1/token":
                self.answer(404, {"error": "not_found"})
                return
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            client_id, secret = form.get("client_id"), form.get("client_secret")
            basic = self.headers.get("Authorization", "")
            if basic.startswith("Basic "):
                client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            grant = platform.grants.pop(form.get("code", ""), None)
            if client_id != CLIENT_ID or secret != CLIENT_SECRET:
                self.answer(401, {"error": "invalid_client"})
                return
            if grant is None or form.get("grant_type") != "authorization_code" or \
                    form.get("redirect_uri") != grant.redirect_uri:
                self.answer(400, {"error": "invalid_grant"})
                return
            verifier = form.get("code_verifier", "")
            expected = base64.urlsafe_b64encode(
                hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if grant.challenge is None or expected != grant.challenge:
                self.answer(400, {"error": "invalid_grant",
                                  "error_description": "PKCE verification failed"})
                return
            tokens = {"access_token": secrets.token_urlsafe(32),
                      "refresh_token": secrets.token_urlsafe(32),
                      "id_token": platform.id_token(grant)}
            platform.secrets_seen.extend([verifier, *tokens.values()])
            self.answer(200, {**tokens, "token_type": "Bearer", "expires_in": 899,
                              "scope": "openid profile"})

    return Handler


@contextmanager
def running_platform() -> Iterator[Platform]:
    platform = Platform()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(platform))
    platform.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield platform
    finally:
        platform.released.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def server_env(platform: Platform) -> dict[str, str]:
    """The settings of a `licore serve` that talks to this stand-in."""
    return {"LICORE_PLATFORM_INVENTORY_URL": platform.url,
            "LICORE_PLATFORM_USERS_URL": platform.url,
            "LICORE_OIDC_ISSUER": platform.issuer,
            "LICORE_OIDC_CLIENT_ID": CLIENT_ID, "LICORE_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "LICORE_PUBLIC_URL": "{url}"}


def free_port_url() -> str:
    """An address nobody listens on (a port just freed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return f"http://127.0.0.1:{port}"
