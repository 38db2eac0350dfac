"""Events from the pages, in Chromium against a real server whose outbox workers reach a
chat-service stand-in and a webhook receiver (real HTTP servers on loopback; the receiver
verifies every signature with `standardwebhooks`): a buyer links their chat account through
the stand-in's OAuth, the seller adds a webhook endpoint and a chat role on the dashboard,
and a grant ends in the role on the chat service, a verified webhook, and both deliveries
shown on the dashboard (docs/events.md, docs/web.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.site import add_person, add_studio, id_in, sign_in
from tests.http.test_events_e2e import outbox_env, wait_for
from tests.support.server import Server, running_server
from tests.support.standins import ChatStandIn, WebhookReceiver, running

pytestmark = pytest.mark.browser

GUILD, ROLE, CHAT_USER = "5550001", "5550002", "5550003"


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatStandIn]:
    stand_in = ChatStandIn()
    with running(stand_in):
        yield stand_in


@pytest.fixture(scope="module")
def events_site(tmp_path_factory: pytest.TempPathFactory,
                chat: ChatStandIn) -> Iterator[Server]:
    url = f"sqlite:///{tmp_path_factory.mktemp('events') / 'licore.db'}"
    with running_server(url, **outbox_env(chat)) as server:
        yield server


@pytest.fixture
def context(browser: Any, events_site: Server) -> Iterator[Callable[[], Any]]:
    """New pages, each in a browser context of its own (one person each)."""
    opened: list[Any] = []

    def new_page() -> Any:
        made = browser.new_context(base_url=events_site.url,
                                   viewport={"width": 1100, "height": 900})
        opened.append(made)
        return made.new_page()

    try:
        yield new_page
    finally:
        for made in opened:
            made.close()


def reload_until(page: Any, what: str, done: Callable[[], bool]) -> None:
    """Reload the page until `done` holds: the outbox delivers in the background."""
    def fresh() -> bool:
        page.reload()
        return done()
    wait_for(what, fresh, timeout=90)


def test_a_grant_reaches_the_chat_role_and_a_verified_webhook_shown_on_the_dashboard(
        events_site: Server, chat: ChatStandIn, context: Callable[[], Any],
        screenshots: Path) -> None:
    seller = add_person(events_site, "sela", "8101")
    buyer = add_person(events_site, "bart", "8102")
    studio = add_studio(events_site, "Sela Swords", seller)

    # The buyer links their chat account on their own page, through the chat's OAuth.
    chat.members.add(CHAT_USER)
    chat.oauth_user = CHAT_USER
    mine = context()
    sign_in(mine, buyer)
    mine.goto("/library")
    mine.get_by_role("link", name="Link chat account").click()
    mine.wait_for_load_state()
    assert mine.url.endswith("/library")
    assert f"Your chat account {CHAT_USER} is linked" in mine.locator("main").inner_text()

    # The seller adds a webhook endpoint: the secret is shown once, on this page only.
    board = context()
    sign_in(board, seller)
    board.goto(f"/dashboard/{studio.id}")
    receiver = WebhookReceiver()
    with running(receiver):
        board.get_by_label("Endpoint URL").fill(receiver.url)
        board.get_by_label("product.changed").uncheck()
        board.get_by_role("button", name="Add endpoint").click()
        assert board.get_by_role("heading", level=1).inner_text() == "Webhook endpoint added"
        secret = board.get_by_label("Signing secret").input_value()
        assert secret.startswith("whsec_")
        receiver.secrets.append(secret)
        board.get_by_role("link", name="Back to the dashboard").click()
        endpoints = board.get_by_role("region", name="Webhook endpoints").inner_text()
        assert receiver.url in endpoints and "Enabled" in endpoints
        assert secret not in board.content()  # shown once: never again

        # A product, the chat role it earns, and a grant to the buyer.
        board.get_by_text("New product").click()
        board.get_by_label("Title").fill("Rune Blade")
        board.get_by_role("button", name="Create draft").click()
        product = id_in(board.url, "prd")
        board.get_by_label("Server (guild) id").fill(GUILD)
        board.get_by_label("Role id").fill(ROLE)
        board.get_by_role("button", name="Add role").click()
        assert board.get_by_role("status").inner_text().startswith(
            f"Chat role {ROLE} in server {GUILD} added")
        roles = board.locator("#chat-roles").inner_text()
        assert GUILD in roles and ROLE in roles
        board.get_by_label("Username or platform user id").fill("bart")
        board.get_by_role("button", name="Grant license").click()
        assert board.get_by_role("status").inner_text() == "License for bart granted."

        wait_for("the role on the chat service",
                 lambda: (GUILD, CHAT_USER, ROLE) in chat.roles)
        wait_for("the verified webhook", lambda: len(receiver.ids()) == 1)
        (granted,) = receiver.received
        assert granted.type == "license.granted" and receiver.invalid == 0
        assert granted.data["product_id"] == product
        assert granted.data["platform_id"] == buyer.account.platform_id

        # The dashboard shows both deliveries, with their state and the receiver's answer.
        board.goto(f"/dashboard/{studio.id}#events")
        deliveries = board.get_by_role("region", name="Recent webhook deliveries")
        hand_outs = board.get_by_role("region", name="Chat-role hand-outs")
        reload_until(board, "both deliveries shown as delivered", lambda: (
            "delivered" in deliveries.inner_text() and "delivered" in hand_outs.inner_text()))
        row = deliveries.locator("tbody tr").first.inner_text()
        assert "license.granted" in row and "204" in row
        given = hand_outs.locator("tbody tr").first.inner_text()
        assert "Give" in given and f"{GUILD}/{ROLE}" in given and "204" in given
        board.locator("#events").screenshot(path=str(screenshots / "dashboard-events.png"))
    log = events_site.log()
    assert secret not in log and chat.bot_token not in log and chat.client_secret not in log

