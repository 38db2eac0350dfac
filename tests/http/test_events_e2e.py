"""Events leaving the service, end to end (docs/events.md): a real `licore serve` whose
outbox workers reach a chat-service stand-in and a webhook receiver, both real HTTP servers
on loopback, the receiver verifying every signature with `standardwebhooks`."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import httpx
import pytest

from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore.tokens import LICENSE_KEY_PREFIX
from tests.http.e2e import People, auth, core, end_a_minute_ago, owner_key, setup_people
from tests.support.server import Server, running_server
from tests.support.standins import ChatStandIn, WebhookReceiver, running

SCOPES = "products:read products:write licenses:read licenses:write"
GUILD, ROLE = "111222333", "444555666"


def wait_for(what: str, done: Callable[[], bool], timeout: float = 90.0) -> None:
    """A deadline, not a timing assertion: the outbox retries with back-off."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.1)


def outbox_env(chat: ChatStandIn, **more: str) -> dict[str, str]:
    return {"LICORE_CHAT_API_URL": f"{chat.url}/api",
            "LICORE_CHAT_AUTHORIZE_URL": f"{chat.url}/oauth2/authorize",
            "LICORE_CHAT_BOT_TOKEN": chat.bot_token, "LICORE_CHAT_CLIENT_ID": chat.client_id,
            "LICORE_CHAT_CLIENT_SECRET": chat.client_secret,
            "LICORE_WEBHOOK_ALLOW_PRIVATE": "true", "LICORE_OUTBOX_RETRY_BASE": "1",
            # The default lease: one shorter than a send and its settling take on a loaded
            # machine lets a second claim send the message again (at least once, by design).
            "LICORE_WEBHOOK_TIMEOUT": "2",
            "LICORE_OUTBOX_POLL_MS": "100", "LICORE_OUTBOX_SWEEP_MS": "200", **more}


@attrs.frozen
class World:
    server: Server
    chat: ChatStandIn
    people: People
    key: str
    product_id: str

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        r = httpx.request(method, f"{self.server.url}/v1{path}", headers=auth(self.key),
                          timeout=30, **kwargs)
        assert r.status_code == 200, r.text
        return r.json()

    def deliveries(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.api("GET", "/webhooks/deliveries")["deliveries"]
        return found

    def hand_outs(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.api("GET", "/chat-roles/hand-outs")["hand_outs"]
        return found

    def hook(self, receiver: WebhookReceiver, *events: str) -> str:
        made = self.api("POST", "/webhooks", json={"url": receiver.url, "events": list(events)})
        assert made["secret"].startswith("whsec_")
        receiver.secrets.append(made["secret"])
        endpoint_id: str = made["id"]
        return endpoint_id


def make_world(server: Server, chat: ChatStandIn, tag: str) -> World:
    people = setup_people(server.database_url, tag)
    key = owner_key(server, people, SCOPES)
    r = httpx.post(f"{server.url}/v1/products", headers=auth(key), json={"title": "Gun Kit"})
    assert r.status_code == 200, r.text
    world = World(server, chat, people, key, r.json()["id"])
    world.api("POST", "/chat-roles", json={"product_id": world.product_id,
                                            "roles": [{"guild_id": GUILD, "role_id": ROLE}]})
    return world


@pytest.fixture(scope="module")
def chat(module_database_url: str) -> Iterator[ChatStandIn]:
    """A stand-in for each database's server: one shared by both would carry the roles and
    requests of one server's tests into the other's."""
    stand_in = ChatStandIn()
    with running(stand_in):
        yield stand_in


@pytest.fixture(scope="module")
def world(module_database_url: str, chat: ChatStandIn) -> Iterator[World]:
    with running_server(module_database_url, **outbox_env(chat)) as server:
        yield make_world(server, chat, "55")


@contextmanager
def signed_in(world: World, username: str, password: str) -> Iterator[httpx.Client]:
    web = httpx.Client(base_url=world.server.url, follow_redirects=True, timeout=30)
    token = re.search(r'name="csrf" value="([^"]+)"', web.get("/signin").text)
    assert token is not None
    r = web.post("/signin", data={"csrf": token.group(1), "username": username,
                                  "password": password})
    assert r.status_code == 200, r.text
    try:
        yield web
    finally:
        web.close()


def link_chat(world: World, username: str, password: str, chat_user: str) -> None:
    """The person links their chat account on their library page (OAuth 2.0, `identify`)."""
    world.chat.oauth_user = chat_user
    with signed_in(world, username, password) as web:
        r = web.get("/chat/link")
        assert r.status_code == 200 and str(r.url).endswith("/library"), r.text
        assert chat_user in r.text  # the library page names the linked account


def test_a_grant_ends_in_a_role_and_a_verified_webhook_and_a_revoke_undoes_it(
        world: World) -> None:
    receiver = WebhookReceiver()
    with running(receiver):
        world.hook(receiver, "license.granted", "license.revoked")
        world.chat.members.add("90001")
        link_chat(world, "buyer55", "buyer-password", "90001")
        world.api("POST", "/licenses", json={"product_id": world.product_id, "user": "255"})
        wait_for("the role is handed out", lambda: (GUILD, "90001", ROLE) in world.chat.roles)
        wait_for("the grant's webhook", lambda: len(receiver.ids()) == 1)
        granted = receiver.received[0]
        assert granted.type == "license.granted"
        assert granted.data["platform_id"] == "255" and granted.data["state"] == "active"
        # No license key leaves the service: no field named for one, no value shaped like one
        # (random ids may spell "key", so the text alone proves nothing).
        assert not any("key" in name.lower() for name in granted.data)
        assert LICENSE_KEY_PREFIX not in str(list(granted.data.values()))

        world.api("DELETE", "/licenses", params={"product_id": world.product_id,
                                                 "user": "255"})
        wait_for("the role is removed", lambda: (GUILD, "90001", ROLE) not in world.chat.roles)
        wait_for("the revoke's webhook", lambda: len(receiver.ids()) == 2)
        assert [r.type for r in receiver.received] == ["license.granted", "license.revoked"]
        assert len(set(receiver.ids())) == 2 and receiver.invalid == 0  # each once, verified
        # The receiver has the webhook a moment before the server records its answer.
        wait_for("the deliveries are recorded", lambda: all(
            d["state"] != "pending" for d in world.deliveries()))
        log = world.deliveries()
        assert {d["id"] for d in log} == set(receiver.ids())
        assert {(d["state"], d["last_status"], d["attempts"]) for d in log} == {
            ("delivered", 204, 1)}
        wait_for("the hand-outs are settled", lambda: all(
            h["state"] == "delivered" for h in world.hand_outs()))
        assert {h["event"] for h in world.hand_outs()} == {"chat_role.add", "chat_role.remove"}
        # no secret reached the server's log
        assert world.chat.bot_token not in world.server.log()
        assert receiver.secrets[0] not in world.server.log()


def test_a_receiver_down_then_up_gets_the_message_later_and_once(world: World) -> None:
    receiver = WebhookReceiver()  # its port is chosen, nothing listens yet
    endpoint = world.hook(receiver, "license.granted")
    world.api("POST", "/licenses", json={"product_id": world.product_id, "user": "7001"})

    def failed_once() -> bool:
        mine = [d for d in world.deliveries() if d.get("endpoint_id") == endpoint]
        return bool(mine) and mine[0]["attempts"] >= 1
    wait_for("a failed attempt", failed_once)
    mine = [d for d in world.deliveries() if d.get("endpoint_id") == endpoint]
    assert mine[0]["state"] == "pending" and mine[0]["last_error"]
    with running(receiver):
        wait_for("the late delivery", lambda: len(receiver.ids()) == 1)
        wait_for("the log says delivered", lambda: [
            d["state"] for d in world.deliveries() if d.get("endpoint_id") == endpoint]
            == ["delivered"])
        assert receiver.ids() == [mine[0]["id"]]
    world.api("DELETE", "/webhooks", params={"id": endpoint})


def test_the_chat_services_429_is_honoured(world: World) -> None:
    # A buyer of its own, linked here: pausing and resuming moves their role.
    add_account(world, "pauser57", "2571")
    world.chat.members.add("90021")
    link_chat(world, "pauser57", "a-password", "90021")
    world.api("POST", "/licenses", json={"product_id": world.product_id, "user": "2571"})
    wait_for("the role is handed out", lambda: (GUILD, "90021", ROLE) in world.chat.roles)
    world.chat.rate_limit_next = 1
    world.api("POST", "/licenses/pause", json={"product_id": world.product_id, "user": "2571"})
    wait_for("the role is removed after the 429",
             lambda: (GUILD, "90021", ROLE) not in world.chat.roles)
    statuses = [s for (m, p, s) in world.chat.requests
                if m == "DELETE" and "/members/90021/" in p]
    assert statuses == [429, 204]
    assert world.chat.early == 0  # nothing came before `retry_after` had passed
    world.api("POST", "/licenses/resume", json={"product_id": world.product_id, "user": "2571"})
    wait_for("the role is back after resume",
             lambda: (GUILD, "90021", ROLE) in world.chat.roles)


def test_a_hand_out_to_someone_who_left_the_server_is_done(world: World) -> None:
    link_chat(world, "owner55", "owner-password", "90003")  # not a member of the guild
    world.api("POST", "/licenses", json={"product_id": world.product_id, "user": "155"})

    def settled() -> bool:
        return all(h["state"] != "pending" for h in world.hand_outs())
    wait_for("the hand-out settles", settled)
    mine = next(h for h in world.hand_outs() if h["event"] == "chat_role.add")
    assert mine["state"] == "delivered" and mine["last_status"] == 404
    with signed_in(world, "owner55", "owner-password") as web:
        board = web.get(f"/dashboard/{world.people.studio_id}").text
    assert "Chat-role hand-outs" in board and "license.granted" in board


def add_account(world: World, name: str, platform_id: str) -> None:
    async def add(d: Deps) -> None:
        await UseCases.of(d).operator.add_account(name, platform_id, "a-password")

    core(world.server.database_url, add)


def test_the_lifecycle_events_arrive_signed_and_chat_roles_follow_the_license(
        world: World) -> None:
    """Transfer, tier change, renewal, the reminder and the expiry (written by the outbox
    workers' sweep, not by a request) reach a receiver over HTTP, each verified; the chat
    role moves with a transfer and goes at expiry."""
    role = "444555777"
    product = world.api("POST", "/products", json={"title": "Timed Kit"})["id"]
    world.api("POST", "/chat-roles", json={"product_id": product,
                                           "roles": [{"guild_id": GUILD, "role_id": role}]})
    world.api("POST", "/products/policy", json={
        "product_id": product, "reminder_days": 5,
        "tiers": [{"name": "pro", "unlock_data": {"pro": True}}]})
    for name, platform_id, chat_user in (("giver56", "2561", "90011"),
                                         ("taker56", "2562", "90012")):
        add_account(world, name, platform_id)
        world.chat.members.add(chat_user)
        link_chat(world, name, "a-password", chat_user)
    receiver = WebhookReceiver()

    def told(topic: str) -> list[dict[str, Any]]:
        return [r.data for r in list(receiver.received)
                if r.completed and r.type == topic and r.data["product_id"] == product]

    with running(receiver):
        world.hook(receiver, "license.granted", "license.transferred", "license.renewed",
                   "license.expired", "license.expiring", "license.tier_changed")
        world.api("POST", "/licenses", json={"product_id": product, "user": "2561",
                                             "duration_days": 3})
        wait_for("the giver's role", lambda: (GUILD, "90011", role) in world.chat.roles)
        # Within the product's 5 days of the end already: the next sweep reminds.
        wait_for("the reminder", lambda: len(told("license.expiring")) == 1)

        moved = world.api("POST", "/licenses/transfer", json={
            "product_id": product, "from_user": "2561", "to_user": "2562"})
        wait_for("the role moves", lambda: (GUILD, "90012", role) in world.chat.roles
                 and (GUILD, "90011", role) not in world.chat.roles)
        wait_for("the transfer's webhook", lambda: len(told("license.transferred")) == 1)
        transferred = told("license.transferred")[0]
        assert (transferred["platform_id"], transferred["from_platform_id"]) == ("2562", "2561")
        assert (transferred["license_id"], transferred["from_license_id"]) == (
            moved["license"]["id"], moved["transferred_from"]["id"])
        # The new holder's license is inside the window too: the next sweep reminds them.
        wait_for("the new holder's reminder", lambda: [
            t["platform_id"] for t in told("license.expiring")] == ["2561", "2562"])

        world.api("POST", "/licenses/tier", json={"product_id": product, "user": "2562",
                                                  "tier": "pro"})
        wait_for("the tier's webhook", lambda: len(told("license.tier_changed")) == 1)
        assert told("license.tier_changed")[0]["tier"] == "pro"

        renewed = world.api("POST", "/licenses/renew", json={
            "product_id": product, "user": "2562", "duration_days": 1})
        wait_for("the renewal's webhook", lambda: len(told("license.renewed")) == 1)
        assert told("license.renewed")[0]["expires_at"] == renewed["license"]["expires_at"]
        # A new end is reminded in its turn, once.
        wait_for("the new end's reminder", lambda: len(told("license.expiring")) == 3)
        assert [t["expires_at"] for t in told("license.expiring")][-1] == \
            renewed["license"]["expires_at"]

        end_a_minute_ago(world.server.database_url, product, "2562")
        wait_for("the expiry's webhook", lambda: len(told("license.expired")) == 1)
        expired = told("license.expired")[0]
        assert (expired["platform_id"], expired["status"]) == ("2562", "expired")
        wait_for("the role goes at expiry",
                 lambda: (GUILD, "90012", role) not in world.chat.roles)
        assert receiver.invalid == 0  # every delivery's signature verified
        mine = Counter(r.id for r in receiver.received if r.completed)
        assert set(mine.values()) == {1}  # each message once
        assert Counter(r.type for r in receiver.received
                       if r.completed and r.data["product_id"] == product) == {
            "license.granted": 1, "license.expiring": 3, "license.transferred": 1,
            "license.tier_changed": 1, "license.renewed": 1, "license.expired": 1}
