"""What the browser tests share: people made through the core, signing in through the page,
an app polling the token endpoint in the background, and runtime checks."""

from __future__ import annotations

import re
import threading
import time
from typing import Any, TypeVar

import attrs
import httpx

from licore.model import Account, Client, Studio
from licore.scopes import Permission
from licore.services.wiring import UseCases
from tests.http.e2e import core
from tests.support.server import Server

PASSWORD = "correct horse battery"
T = TypeVar("T")


@attrs.frozen
class Person:
    account: Account
    password: str = PASSWORD

    @property
    def name(self) -> str:
        return self.account.username


def add_person(server: Server, username: str, platform_id: str) -> Person:
    account = core(server.database_url,
                   lambda d: UseCases.of(d).operator.add_account(username, platform_id, PASSWORD))
    return Person(account)


def add_studio(server: Server, name: str, owner: Person) -> Studio:
    return core(server.database_url, lambda d: UseCases.of(d).operator.add_studio(name, owner.name))


def add_collaborator(server: Server, studio: Studio, who: Person,
                     *permissions: Permission) -> None:
    core(server.database_url, lambda d: UseCases.of(d).operator.set_collaborator(
        studio.name, who.name, frozenset(permissions)))


def add_client(server: Server, name: str, scopes: str) -> Client:
    return core(server.database_url, lambda d: UseCases.of(d).operator.add_client(
        name, f"{name} installs licensed models into your game", scopes))


def sign_in(page: Any, who: Person, *, at: str = "/signin") -> None:
    """Sign in through the form; `at` may be a page that sends the person to sign in."""
    page.goto(at)
    page.get_by_label("Username").fill(who.name)
    page.get_by_label("Password").fill(who.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    assert page.get_by_role("status").filter(has_text=f"Signed in as {who.name}").count() == 1


def start_flow(server: Server, client: Client, scope: str) -> dict[str, Any]:
    r = httpx.post(f"{server.url}/auth/device/code", json={"client_id": client.id,
                                                           "scope": scope})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


class PollingApp:
    """An app polling `/auth/device/token` every `interval` seconds, as the flow asks, until
    it gets an answer other than `authorization_pending`."""

    def __init__(self, server: Server, flow: dict[str, Any]) -> None:
        self.url = f"{server.url}/auth/device/token"
        self.device_code = flow["device_code"]
        self.interval = int(flow["interval"])
        self.polls = 0
        self.answer: httpx.Response | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            r = httpx.post(self.url, json={"device_code": self.device_code})
            final = r.status_code != 400 or r.json().get("error") != "authorization_pending"
            if final:
                self.answer = r  # before the count, which `still_pending` watches
            self.polls += 1
            if final:
                return
            self._stop.wait(self.interval)

    def result(self, timeout: float = 30) -> httpx.Response:
        self._thread.join(timeout)
        assert self.answer is not None, "the app got no answer but authorization_pending"
        return self.answer

    def still_pending(self) -> bool:
        """After one more poll (a deadline, not a timing assertion): still no answer."""
        seen = self.polls
        deadline = time.monotonic() + self.interval + 30
        while self.polls == seen and self._thread.is_alive():
            assert time.monotonic() < deadline, "the app stopped polling"
            time.sleep(0.05)
        return self._thread.is_alive() and self.answer is None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def runtime_check(server: Server, product_id: str, platform_id: str, key: str) -> bool:
    r = httpx.post(f"{server.url}/runtime/check",
                   json={"user_id": platform_id, "product_id": product_id, "key": key})
    assert r.status_code == 200, r.text
    answer: bool = r.json()["success"]
    return answer


def id_in(url: str, kind: str) -> str:
    found = re.search(rf"/({kind}_[A-Za-z0-9]+)", url)
    assert found, url
    return found.group(1)
