"""One studio's dead webhook endpoints do not hold up another studio's deliveries
(docs/events.md, "How delivery is scheduled"), end to end: a real `licore serve`, studio B's
three endpoints stand-ins that accept each request and never answer, studio A's a verifying
receiver, all real HTTP servers on loopback.

No timing assertion: the sender's timeout is long (20 s), and A's events must all arrive, in
order, while B's first sends are still hanging, unanswered and not yet given up. Sent one
after another, as before, B's sends would each have to time out first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.http.test_events_e2e import World, make_world, outbox_env, wait_for
from tests.support.server import running_server
from tests.support.standins import ChatStandIn, SilentReceiver, WebhookReceiver, running

TIMEOUT = "20"


@pytest.fixture(scope="module")
def worlds(module_database_url: str) -> Iterator[tuple[World, World]]:
    chat = ChatStandIn()
    with running(chat), running_server(module_database_url, **outbox_env(
            chat, LICORE_WEBHOOK_TIMEOUT=TIMEOUT, LICORE_OUTBOX_LEASE="40")) as server:
        yield make_world(server, chat, "71"), make_world(server, chat, "72")


def test_a_studios_hanging_endpoints_do_not_hold_up_another_studios_deliveries(
        worlds: tuple[World, World]) -> None:
    a, b = worlds
    dead = [SilentReceiver() for _ in range(3)]
    healthy = WebhookReceiver()
    with running(*dead, healthy):
        for receiver in dead:
            b.api("POST", "/webhooks", json={"url": receiver.url,
                                              "events": ["license.granted"]})
        a.hook(healthy, "license.granted")
        for n in range(4):  # B's events first: under a queue in order they would go first
            b.api("POST", "/licenses", json={"product_id": b.product_id, "user": f"71{n}"})
        wait_for("B's sends have started", lambda: any(r.waiting for r in dead), timeout=15)
        users = [f"72{n}" for n in range(4)]
        for user in users:
            a.api("POST", "/licenses", json={"product_id": a.product_id, "user": user})
        wait_for("A's four events", lambda: len(healthy.ids()) == 4, timeout=15)
        # B's sends are all still out: none answered, none given up by the sender yet.
        assert [(r.waiting, r.abandoned) for r in dead] == [(1, 0)] * 3
        assert [r.data["platform_id"] for r in healthy.received] == users  # in order
        assert healthy.invalid == 0
        # And B's later events wait behind their endpoint's first: one send per endpoint.
        b_log = [d for d in b.deliveries() if d["state"] == "pending"]
        assert len(b_log) == 12 and sum(d["attempts"] for d in b_log) == 0
