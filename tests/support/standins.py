"""Stand-ins of the outside services events reach, as real HTTP servers on loopback: the
community-chat service (its REST role endpoints and its OAuth 2.0 sign-in) and a seller's
webhook receiver that verifies every signature with `standardwebhooks`, as a receiver would.

Each runs in a thread of the test process and records what arrived, so a test asserts on
what the outside saw."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import attrs
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.support.server import free_port

ROLE_PATH = re.compile(r"^/api/guilds/(\d+)/members/(\d+)/roles/(\d+)$")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def _serve(handler: type[BaseHTTPRequestHandler], port: int) -> _Server:
    server = _Server(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@attrs.define
class ChatStandIn:
    """Discord-shaped: `PUT`/`DELETE /api/guilds/{g}/members/{u}/roles/{r}` with a bot
    token, 404 code 10007 for a user who is not a member, 429 with `retry_after` when told
    to, and the OAuth endpoints (`/oauth2/authorize`, `/api/oauth2/token`,
    `/api/users/@me`)."""

    bot_token: str = attrs.field(factory=lambda: "bot-" + secrets.token_hex(16))
    client_id: str = "4242"
    client_secret: str = attrs.field(factory=lambda: secrets.token_hex(16))
    port: int = attrs.field(factory=free_port)
    members: set[str] = attrs.field(factory=set)
    roles: set[tuple[str, str, str]] = attrs.field(factory=set)
    requests: list[tuple[str, str, int]] = attrs.field(factory=list)
    rate_limit_next: int = 0  # answer this many role calls with 429 first
    retry_after: float = 1.0
    early: int = 0  # calls that came before a 429's retry_after had passed
    oauth_user: str = ""  # who signs in at the authorize page
    _not_before: float = 0.0
    _codes: dict[str, str] = attrs.field(factory=dict)
    _tokens: dict[str, str] = attrs.field(factory=dict)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _server: _Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._server = _serve(self._handler(), self.port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _role_call(self, method: str, path: str, auth: str) -> tuple[int, Any]:
        found = ROLE_PATH.match(path)
        if found is None:
            return 404, {"message": "404: Not Found", "code": 0}
        if auth != f"Bot {self.bot_token}":
            return 401, {"message": "401: Unauthorized", "code": 0}
        guild, user, role = found.groups()
        with self._lock:
            now = time.monotonic()
            if now < self._not_before:
                self.early += 1
                return 429, {"message": "You are being rate limited.",
                             "retry_after": self._not_before - now, "global": False}
            if self.rate_limit_next > 0:
                self.rate_limit_next -= 1
                self._not_before = now + self.retry_after
                return 429, {"message": "You are being rate limited.",
                             "retry_after": self.retry_after, "global": False}
            if user not in self.members:
                return 404, {"message": "Unknown Member", "code": 10007}
            if method == "PUT":
                self.roles.add((guild, user, role))
            else:
                self.roles.discard((guild, user, role))
            return 204, None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: Any = None,
                        headers: dict[str, str] | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if body is not None:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _role(self) -> None:
                status, body = stand_in._role_call(self.command, self.path,
                                                   self.headers.get("authorization", ""))
                with stand_in._lock:
                    stand_in.requests.append((self.command, self.path, status))
                headers = {"x-ratelimit-limit": "10", "x-ratelimit-remaining": "9",
                           "x-ratelimit-reset-after": "1"}
                if status == 429:
                    headers = {"retry-after": str(int(stand_in.retry_after + 0.999)),
                               "x-ratelimit-scope": "user"}
                self._answer(status, body, headers)

            do_PUT = _role
            do_DELETE = _role

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == "/oauth2/authorize":
                    # The person approves at once; the service sends them back with a code.
                    if (query.get("client_id") != stand_in.client_id
                            or query.get("scope") != "identify"
                            or query.get("response_type") != "code"):
                        self._answer(400, {"error": "invalid_request"})
                        return
                    code = secrets.token_urlsafe(12)
                    stand_in._codes[code] = stand_in.oauth_user
                    back = query["redirect_uri"] + "?" + urlencode(
                        {"code": code, "state": query.get("state", "")})
                    self._answer(302, None, {"location": back})
                    return
                if parts.path == "/api/users/@me":
                    token = self.headers.get("authorization", "").removeprefix("Bearer ")
                    user = stand_in._tokens.get(token)
                    if user is None:
                        self._answer(401, {"message": "401: Unauthorized", "code": 0})
                        return
                    self._answer(200, {"id": user, "username": f"user{user}"})
                    return
                self._answer(404, {"message": "404: Not Found", "code": 0})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if self.path != "/api/oauth2/token":
                    self._answer(404, {"message": "404: Not Found", "code": 0})
                    return
                import base64

                expected = base64.b64encode(
                    f"{stand_in.client_id}:{stand_in.client_secret}".encode()).decode()
                user = stand_in._codes.pop(form.get("code", ""), None)
                if (self.headers.get("authorization") != f"Basic {expected}" or user is None
                        or form.get("grant_type") != "authorization_code"):
                    self._answer(400, {"error": "invalid_grant"})
                    return
                token = secrets.token_urlsafe(16)
                stand_in._tokens[token] = user
                self._answer(200, {"access_token": token, "token_type": "Bearer",
                                   "expires_in": 604800, "scope": "identify"})

        return Handler


@attrs.define
class Received:
    id: str
    type: str
    data: dict[str, Any]
    completed: bool  # False when the receiver never answered (the sender was killed)


@attrs.define
class WebhookReceiver:
    """Verifies each delivery's signature with the secrets it knows; answers 204 to a valid
    one and 400 to anything else. `hang_first`: hold the first valid request this long
    before answering (a sender killed meanwhile never hears back)."""

    secrets: list[str] = attrs.field(factory=list)
    port: int = attrs.field(factory=free_port)
    received: list[Received] = attrs.field(factory=list)
    invalid: int = 0
    hang_first: float = 0.0
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _server: _Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        self._server = _serve(self._handler(), self.port)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def ids(self) -> list[str]:
        with self._lock:
            return [r.id for r in self.received if r.completed]

    def _verify(self, body: bytes, headers: dict[str, str]) -> Any:
        for secret in self.secrets:
            try:
                return Webhook(secret).verify(body, headers)
            except WebhookVerificationError:
                continue
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                payload = receiver._verify(body, headers)
                if payload is None:
                    with receiver._lock:
                        receiver.invalid += 1
                    self.send_response(400)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                entry = Received(headers["webhook-id"], payload["type"], payload["data"],
                                 completed=False)
                with receiver._lock:
                    receiver.received.append(entry)
                    hang, receiver.hang_first = receiver.hang_first, 0.0
                if hang:
                    time.sleep(hang)
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()
                entry.completed = True

        return Handler


@attrs.define
class SilentReceiver:
    """A receiver that accepts each request, reads it, and never answers: it holds the
    connection until the sender gives up (closes it) or the stand-in stops. Counts the
    requests waiting on it now and those whose sender gave up."""

    port: int = attrs.field(factory=free_port)
    waiting: int = 0
    abandoned: int = 0
    _stop: threading.Event = attrs.field(factory=threading.Event)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _server: _Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        self._stop.clear()
        self._server = _serve(self._handler(), self.port)

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        silent = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                with silent._lock:
                    silent.waiting += 1
                self.connection.settimeout(0.1)
                try:
                    while not silent._stop.is_set():
                        try:
                            if self.connection.recv(1) == b"":  # the sender hung up
                                with silent._lock:
                                    silent.abandoned += 1
                                break
                        except TimeoutError:
                            continue
                        except OSError:
                            break
                finally:
                    with silent._lock:
                        silent.waiting -= 1
                self.close_connection = True

        return Handler


@contextmanager
def running(*servers: ChatStandIn | WebhookReceiver | SilentReceiver) -> Iterator[None]:
    for s in servers:
        s.start()
    try:
        yield
    finally:
        for s in servers:
            s.stop()
