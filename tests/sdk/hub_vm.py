"""The hub kit (sdk/luau/src/Hub.luau) in the real Luau VM, with the Roblox stand-ins of
fake_hub_roblox.luau, whose HttpService makes real HTTP requests through a host callback.

`Gate` is a loopback HTTP proxy in front of a real licore server: it forwards, answers 429
or 503 itself, or is down (its port closed), and records every request that reached it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import httpx

from tests.sdk.installed import Inst, LuauGame
from tests.sdk.luau_sdk import SDK_SOURCE, as_bytes, sdk_loader
from tests.support.luau_vm import pluau
from tests.support.server import free_port

HUB_SOURCE = SDK_SOURCE.parent / "Hub.luau"
FAKE = Path(__file__).with_name("fake_hub_roblox.luau")
SECRET_NAME = "licore_studio_key"


@attrs.frozen
class Sent:
    """One request as it left the VM (the Authorization value resolved by the host)."""

    url: str
    method: str
    headers: dict[str, str]
    body: str


def _text(value: Any) -> str | None:
    return None if value is None else as_bytes(value).decode("utf-8")


class HubVM:
    """One game server: a Luau VM holding the stand-in services and the hub kit."""

    def __init__(self, *, secrets: dict[str, str], bind_receipt_handler: bool = True,
                 subscription_details: bool = True, subscription_event: bool = True,
                 tree: Inst | None = None) -> None:
        """With `tree` (a place synced by Rojo's rules), its top-level children are services
        too, and `self.place` runs its scripts with Roblox's `script` and `require`."""
        self.lua = pluau().Lua()
        self.secrets = secrets
        self.sent: list[Sent] = []
        self.sleeps: list[float] = []
        self.logs: list[str] = []
        self.clock = 0.0
        self.calls: dict[str, int] = {}
        lua = self.lua
        self.sdk = sdk_loader(lua)()
        json = self.table({"encode": self.sdk.get("jsonEncode"),
                           "decode": self.sdk.get("jsonDecode")})
        host = self.table({"request": self._fn(self._request),
                           "hasSecret": self._fn(lambda name: (_text(name) in self.secrets,)),
                           "sleep": self._fn(self._sleep),
                           "count": self._fn(self._count)})
        fake = lua.load_chunk(FAKE.read_text(encoding="utf-8"), "fake_hub")(host, json)[0]
        options = self.table({
            "bindReceiptHandler": bind_receipt_handler,
            "subscriptionDetails": subscription_details,
            "subscriptionEvent": subscription_event})
        self.place = LuauGame(tree, lua=lua) if tree is not None else None
        if self.place is not None and tree is not None:
            services = lua.create_table()
            for child in tree.children:
                services.set(child.name, self.place.tables[id(child)])
            options.set("services", services)
        self.world = fake.get("world")(options)[0]
        g = lua.globals()
        for name in ("game", "Enum", "task"):
            g.set(name, self.world.get(name))
        # As Roblox runs scripts: read-only globals, safe environments.
        lua.sandbox(True)
        self.module = lua.load_chunk(HUB_SOURCE.read_text(encoding="utf-8"), "Hub")()[0]

    # -- bridging ------------------------------------------------------------------------------

    def _fn(self, f: Any) -> Any:
        return self.lua.create_function(lambda _lua, args: f(*args))

    def table(self, value: dict[str, Any] | list[Any]) -> Any:
        t = self.lua.create_table()
        items = value.items() if isinstance(value, dict) else enumerate(value, 1)
        for k, v in items:
            t.set(k, self.table(v) if isinstance(v, dict | list) else v)
        return t

    def _sleep(self, seconds: float) -> tuple[()]:
        self.sleeps.append(float(seconds))
        self.clock += float(seconds)
        return ()

    def _log(self, message: Any) -> tuple[()]:
        self.logs.append(_text(message) or "")
        return ()

    def _count(self, name: Any) -> tuple[()]:
        key = _text(name) or ""
        self.calls[key] = self.calls.get(key, 0) + 1
        return ()

    def _request(self, url: Any, method: Any, headers_json: Any, body: Any,
                 secret_header: Any, secret_name: Any, prefix: Any, suffix: Any,
                 ) -> tuple[bool, int, str, str | None]:
        import json as pyjson

        headers: dict[str, str] = pyjson.loads(_text(headers_json) or "{}") or {}
        if secret_header is not None:
            name = _text(secret_name) or ""
            headers[_text(secret_header) or ""] = (
                (_text(prefix) or "") + self.secrets[name] + (_text(suffix) or ""))
        sent = Sent(_text(url) or "", _text(method) or "", headers, _text(body) or "")
        self.sent.append(sent)
        try:
            r = httpx.request(sent.method, sent.url, headers=headers,
                              content=sent.body.encode("utf-8"), timeout=30)
        except httpx.TransportError:
            return False, 0, "", None
        return True, r.status_code, r.text, r.headers.get("retry-after")

    # -- the hub ---------------------------------------------------------------------------------

    def hub(self, api_url: str, catalog: dict[str, dict[str, Any]], **extra: Any) -> Any:
        """`Hub.new(config):start()` with the test's clock, sleep and log; jitter fixed at 1."""
        config = self.table({"apiUrl": api_url, "secretName": SECRET_NAME, "catalog": catalog})
        config.set("log", self._fn(self._log))
        config.set("clock", self._fn(lambda: (self.clock,)))
        config.set("random", self._fn(lambda: (0.5,)))
        for k, v in extra.items():
            config.set(k, v)
        hub = self.module.get("new")(config)[0]
        hub.get("start")(hub)
        return hub

    def call(self, name: str, *args: Any) -> Any:
        results = list(self.world.get(name)(*args))
        return results[0] if results else None

    def deliver(self, user: int, product: int, purchase_id: str) -> str:
        return _text(self.call("deliver", user, product, purchase_id)) or ""


def method(obj: Any, name: str, *args: Any) -> list[Any]:
    return list(obj.get(name)(obj, *args))


# -- the gate -------------------------------------------------------------------------------------


@attrs.frozen
class Arrived:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Gate:
    """A loopback proxy in front of `target`: mode "forward", "429" (Retry-After: 1) or
    "503"; `down()` closes its port (connections are refused) and `up()` reopens it."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = "forward"
        self.arrived: list[Arrived] = []
        self._server: _Server | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                gate.arrived.append(Arrived(self.command, self.path, dict(self.headers), body))
                if gate.mode == "429":
                    self._answer(429, b'{"error":"rate_limited"}',
                                 {"Retry-After": "1", "Content-Type": "application/json"})
                    return
                if gate.mode == "503":
                    self._answer(503, b"unavailable", {})
                    return
                skip = {"host", "content-length", "connection"}
                r = httpx.request(self.command, gate.target + self.path, content=body,
                                  headers={k: v for k, v in self.headers.items()
                                           if k.lower() not in skip}, timeout=30)
                keep = {k: v for k, v in r.headers.items() if k.lower() in
                        ("content-type", "retry-after")}
                self._answer(r.status_code, r.content, keep)

            do_GET = do_POST = do_DELETE = _any

        return Handler

    def up(self) -> None:
        server = _Server(("127.0.0.1", self.port), self._handler())
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@contextmanager
def running_gate(target: str) -> Iterator[Gate]:
    gate = Gate(target)
    gate.up()
    try:
        yield gate
    finally:
        gate.down()
