"""The hub kit (sdk/luau/src/Hub.luau) in the real Luau VM against a real `licore serve`,
on SQLite and PostgreSQL: stand-ins of MarketplaceService, Players, HttpService and the
Secret (tests/sdk/fake_hub_roblox.luau) whose HttpService makes real HTTP requests, through
a loopback proxy (`Gate`) that can be down or answer 429 / 503 in the server's place."""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from tests.http.e2e import auth, end_a_minute_ago, owner_key, setup_people
from tests.http.test_runtime_e2e import ALL, v1
from tests.sdk.hub_vm import SECRET_NAME, Gate, HubVM, running_gate
from tests.sdk.installed import Inst, rojo_tree
from tests.support.server import Server

DEV_PRODUCT = 1_001
GAME_PASS = 2_002
SUBSCRIPTION = "EXP-3003"
_users = itertools.count(9_100_000)


@attrs.frozen
class Shop:
    key: str
    sold: str  # by developer product
    pass_product: str  # by game pass
    monthly: str  # by subscription

    def catalog(self) -> dict[str, dict[str, Any]]:
        return {self.sold: {"developerProduct": DEV_PRODUCT},
                self.pass_product: {"gamePass": GAME_PASS},
                self.monthly: {"subscription": SUBSCRIPTION}}


@pytest.fixture(scope="module")
def shop(server: Server) -> Shop:
    people = setup_people(server.database_url, "8")
    key = owner_key(server, people, ALL)
    ids = [v1(server, "POST", "/products", key, json={"title": t}).json()["id"]
           for t in ("Hub sword", "Hub pass", "Hub monthly")]
    return Shop(key, *ids)


@pytest.fixture
def gate(server: Server) -> Iterator[Gate]:
    with running_gate(server.url) as g:
        yield g


def user() -> int:
    return next(_users)


def held(server: Server, shop: Shop, product: str, platform_id: int) -> list[dict[str, Any]]:
    """The licenses `platform_id` holds for `product`, as the Partner API lists them."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"product_id": product, "limit": 1000}
        if cursor:
            params["cursor"] = cursor
        page = v1(server, "GET", "/licenses", shop.key, params=params).json()
        found += [lc for lc in page["licenses"] if lc["platform_id"] == str(platform_id)]
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def vm(shop: Shop, *, bind_receipt_handler: bool = True, subscription_details: bool = True,
       subscription_event: bool = True) -> HubVM:
    return HubVM(secrets={SECRET_NAME: shop.key}, bind_receipt_handler=bind_receipt_handler,
                 subscription_details=subscription_details,
                 subscription_event=subscription_event)


def purchase_id() -> str:
    return secrets.token_hex(16)


# -- receipts ---------------------------------------------------------------------------------


def test_one_receipt_delivered_three_times_gives_one_license(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    hub = game.hub(gate.url, shop.catalog())
    assert hub.get("receiptMode") == "BindReceiptHandler"
    buyer, receipt = user(), purchase_id()
    answers = [game.deliver(buyer, DEV_PRODUCT, receipt) for _ in range(3)]
    assert answers == ["ReceiptDecision.Processed"] * 3
    (lc,) = held(server, shop, shop.sold, buyer)
    assert lc["status"] == "active"
    # Every grant carried the purchase as its idempotency key.
    grants = [s for s in game.sent if s.url.endswith("/v1/licenses")]
    assert grants and {s.headers["Idempotency-Key"] for s in grants} == {receipt}
    if hub.get("provenance"):  # a licore that records where a license came from
        assert lc["source"] == "developer_product"


def test_the_server_down_then_up_gives_not_processed_yet_then_one_license(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    buyer, receipt = user(), purchase_id()
    gate.down()
    assert game.deliver(buyer, DEV_PRODUCT, receipt) == "ReceiptDecision.NotProcessedYet"
    # Three retries, backing off exponentially (jitter fixed at 1x by the test).
    assert game.sleeps == [1.0, 2.0, 4.0]
    assert held(server, shop, shop.sold, buyer) == []
    gate.up()
    assert game.deliver(buyer, DEV_PRODUCT, receipt) == "ReceiptDecision.Processed"
    assert len(held(server, shop, shop.sold, buyer)) == 1
    assert any("not confirmed (network error)" in line for line in game.logs)


def test_back_off_is_jittered_and_capped(server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog(), maxBackoff=3,
             random=game.lua.create_function(lambda *_: (0.9,)))
    gate.down()
    assert game.deliver(user(), DEV_PRODUCT, purchase_id()) == "ReceiptDecision.NotProcessedYet"
    assert game.sleeps == pytest.approx([1.4, 2.8, 3.0])


@pytest.mark.parametrize("mode", ["429", "503"])
def test_a_429_or_5xx_gives_not_processed_yet_and_no_license(
        server: Server, shop: Shop, gate: Gate, mode: str) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    buyer, receipt = user(), purchase_id()
    gate.mode = mode
    assert game.deliver(buyer, DEV_PRODUCT, receipt) == "ReceiptDecision.NotProcessedYet"
    assert held(server, shop, shop.sold, buyer) == []
    if mode == "429":  # Retry-After: 1 is honoured: no wait shorter than it
        assert game.sleeps and min(game.sleeps) >= 1
    gate.mode = "forward"
    assert game.deliver(buyer, DEV_PRODUCT, receipt) == "ReceiptDecision.Processed"
    assert len(held(server, shop, shop.sold, buyer)) == 1


def test_a_buyer_who_already_owns_it_gives_processed(
        server: Server, shop: Shop, gate: Gate) -> None:
    buyer = user()
    v1(server, "POST", "/licenses", shop.key, json={"product_id": shop.sold, "user": str(buyer)})
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    assert game.deliver(buyer, DEV_PRODUCT, purchase_id()) == "ReceiptDecision.Processed"
    assert len(held(server, shop, shop.sold, buyer)) == 1


def forget_key(server: Server, key: str) -> None:
    """A day passing for one Idempotency-Key: the housekeeping sweep deletes it."""
    url = server.database_url
    if url.startswith("sqlite"):
        import sqlite3

        con = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            with con:
                con.execute("DELETE FROM idempotency_keys WHERE idem_key = ?", (key,))
        finally:
            con.close()
        return
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM idempotency_keys WHERE idem_key = %s", (key,))


def revoke(server: Server, shop: Shop, product: str, buyer: int) -> None:
    v1(server, "DELETE", "/licenses", shop.key,
       params={"product_id": product, "user": str(buyer)})


def test_a_refunded_receipt_delivered_again_days_later_is_settled_and_stays_revoked(
        server: Server, shop: Shop, gate: Gate) -> None:
    """Issue 45 item 3: the acknowledgement was lost, the seller revoked for the refund, and
    the receipt comes back after its Idempotency-Key was forgotten."""
    buyer, receipt = user(), purchase_id()
    first = vm(shop)
    first.hub(gate.url, shop.catalog())
    assert first.deliver(buyer, DEV_PRODUCT, receipt) == "ReceiptDecision.Processed"
    revoke(server, shop, shop.sold, buyer)
    forget_key(server, receipt)
    later = vm(shop)
    later.hub(gate.url, shop.catalog())
    assert later.deliver(buyer, DEV_PRODUCT, receipt) == "ReceiptDecision.Processed"
    (lc,) = held(server, shop, shop.sold, buyer)
    assert lc["status"] == "inactive"
    assert any("revoked by the seller" in line for line in later.logs), later.logs
    assert later.sleeps == []  # settled: nothing to retry


def test_a_refunded_game_pass_still_owned_stays_revoked_on_the_next_join(
        server: Server, shop: Shop, gate: Gate) -> None:
    buyer = user()
    first = vm(shop)
    first.call("ownPass", buyer, GAME_PASS)
    first.hub(gate.url, shop.catalog())
    first.call("join", buyer)
    assert [lc["status"] for lc in held(server, shop, shop.pass_product, buyer)] == ["active"]
    revoke(server, shop, shop.pass_product, buyer)
    forget_key(server, f"game_pass-{buyer}-{GAME_PASS}")
    later = vm(shop)
    later.call("ownPass", buyer, GAME_PASS)
    later.hub(gate.url, shop.catalog())
    later.call("join", buyer)
    assert [lc["status"] for lc in held(server, shop, shop.pass_product, buyer)] == ["inactive"]
    assert any("revoked by the seller" in line for line in later.logs), later.logs


def test_a_second_purchase_of_a_held_product_is_told_to_the_game(
        server: Server, shop: Shop, gate: Gate) -> None:
    buyer = user()
    game = vm(shop)
    told: list[tuple[int, str, str]] = []

    def already(user_id: Any, product: Any, receipt: Any) -> tuple[()]:
        told.append((int(user_id), str(product.decode() if isinstance(product, bytes)
                                       else product), str(receipt.get("PurchaseId"))))
        return ()

    game.hub(gate.url, shop.catalog(), alreadyOwned=game.lua.create_function(
        lambda _lua, args: already(*args)))
    first = purchase_id()
    assert game.deliver(buyer, DEV_PRODUCT, first) == "ReceiptDecision.Processed"
    assert told == []
    second = purchase_id()
    assert game.deliver(buyer, DEV_PRODUCT, second) == "ReceiptDecision.Processed"
    assert [(u, p) for u, p, _ in told] == [(buyer, shop.sold)]
    assert len(held(server, shop, shop.sold, buyer)) == 1


def test_a_plan_sold_by_its_developer_product_grants_then_extends(
        server: Server, shop: Shop, gate: Gate) -> None:
    """Issue 45 item 5: one licore product, sold as a 30-day plan and as a plan for good."""
    pid = v1(server, "POST", "/products", shop.key, json={"title": "Hub plans"}).json()["id"]
    v1(server, "POST", "/products/policy", shop.key, json={"product_id": pid, "plans": [
        {"id": "month", "name": "30 days", "duration_days": 30},
        {"id": "life", "name": "For good"}]})
    game = vm(shop)
    game.hub(gate.url, {pid: {"plans": {5_001: "month", 5_002: "life"}}})
    buyer = user()
    assert game.deliver(buyer, 5_001, purchase_id()) == "ReceiptDecision.Processed"
    (first,) = held(server, shop, pid, buyer)
    assert first["expires_at"] is not None
    assert game.deliver(buyer, 5_001, purchase_id()) == "ReceiptDecision.Processed"
    (second,) = held(server, shop, pid, buyer)
    assert second["expires_at"] > first["expires_at"]  # ISO 8601 sorts as time
    assert game.deliver(buyer, 5_002, purchase_id()) == "ReceiptDecision.Processed"
    (last,) = held(server, shop, pid, buyer)
    assert last["expires_at"] is None and last["status"] == "active"


def test_the_older_process_receipt_callback_is_used_where_bind_receipt_handler_is_missing(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop, bind_receipt_handler=False)
    hub = game.hub(gate.url, shop.catalog())
    assert hub.get("receiptMode") == "ProcessReceipt"
    buyer, receipt = user(), purchase_id()
    gate.down()
    assert game.deliver(buyer, DEV_PRODUCT, receipt) == "ProductPurchaseDecision.NotProcessedYet"
    gate.up()
    assert game.deliver(buyer, DEV_PRODUCT, receipt) == "ProductPurchaseDecision.PurchaseGranted"
    assert len(held(server, shop, shop.sold, buyer)) == 1


def test_a_receipt_for_a_product_outside_the_catalog_stays_open(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    assert game.deliver(user(), 77, purchase_id()) == "ReceiptDecision.NotProcessedYet"
    assert game.sent == []


def test_receipts_outside_the_catalog_go_to_the_places_own_handler(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    seen: list[int] = []

    def other(receipt: Any) -> tuple[bool]:
        seen.append(int(receipt.get("ProductId")))
        return (True,)

    game.hub(gate.url, shop.catalog(), otherReceipt=game.lua.create_function(
        lambda _lua, args: other(*args)))
    assert game.deliver(user(), 77, purchase_id()) == "ReceiptDecision.Processed"
    assert seen == [77] and game.sent == []
    buyer = user()
    assert game.deliver(buyer, DEV_PRODUCT, purchase_id()) == "ReceiptDecision.Processed"
    assert seen == [77] and len(held(server, shop, shop.sold, buyer)) == 1


def test_a_refused_grant_leaves_the_receipt_open(
        server: Server, shop: Shop, gate: Gate) -> None:
    """A wrong product id in the catalog (404) is the seller's to fix: the buyer paid, so
    the receipt is not acknowledged, and comes back once the catalog is right."""
    game = vm(shop)
    game.hub(gate.url, {"prod_missing": {"developerProduct": DEV_PRODUCT}})
    assert game.deliver(user(), DEV_PRODUCT, purchase_id()) == "ReceiptDecision.NotProcessedYet"
    assert game.sleeps == []  # a 4xx is not retried
    assert any("HTTP 404" in line for line in game.logs)


# -- the request budget -----------------------------------------------------------------------


def test_requests_past_the_budget_wait_and_then_are_not_sent(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog(), maxPerMinute=4, maxQueueWait=0)
    answers: list[str] = []
    while not answers or answers[-1] == "ReceiptDecision.Processed":
        answers.append(game.deliver(user(), DEV_PRODUCT, purchase_id()))
    # The minute's four requests were all sent, and not one more: the last receipt stays open.
    assert len(gate.arrived) == 4
    assert answers[-1] == "ReceiptDecision.NotProcessedYet" and len(answers) >= 4
    # With room to wait, a request waits out the minute (the test's clock) and goes through.
    game2 = vm(shop)
    game2.hub(gate.url, shop.catalog(), maxPerMinute=2, maxQueueWait=120)
    answers = [game2.deliver(user(), DEV_PRODUCT, purchase_id()) for _ in range(3)]
    assert answers == ["ReceiptDecision.Processed"] * 3
    assert game2.sleeps == [60.0]


# -- game passes ------------------------------------------------------------------------------


def test_a_game_pass_bought_mid_session_and_found_on_rejoin_gives_one_license(
        server: Server, shop: Shop, gate: Gate) -> None:
    buyer = user()
    first = vm(shop)
    first.hub(gate.url, shop.catalog())
    player = first.call("join", buyer)
    assert held(server, shop, shop.pass_product, buyer) == []
    first.call("buyPass", player, GAME_PASS)
    (lc,) = held(server, shop, shop.pass_product, buyer)
    assert lc["status"] == "active"
    # Rejoining the same server: ownership is cached, nothing is asked again.
    before = len(first.sent)
    first.call("leave", player)
    first.call("join", buyer)
    assert len(first.sent) == before
    # Another server finds the pass on join: one idempotent grant, still one license.
    second = vm(shop)
    second.call("ownPass", buyer, GAME_PASS)
    second_hub = second.hub(gate.url, shop.catalog())
    second.call("join", buyer)
    # (A licore without provenance fields refuses the first try, and the kit resends without.)
    assert {s.headers["Idempotency-Key"] for s in second.sent} == {f"game_pass-{buyer}-{GAME_PASS}"}
    assert len(second.sent) == (1 if second_hub.get("provenance") else 2)
    assert len(held(server, shop, shop.pass_product, buyer)) == 1


def test_a_player_without_the_pass_gets_nothing(server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    buyer = user()
    game.call("join", buyer)
    assert game.calls["UserOwnsGamePassAsync"] == 1
    assert [s for s in game.sent if "/licenses" in s.url] == []


# -- subscriptions ----------------------------------------------------------------------------


def test_a_subscription_grants_renews_and_lapses_and_the_license_expires(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    buyer = user()
    player = game.call("join", buyer)
    assert held(server, shop, shop.monthly, buyer) == []  # not subscribed: nothing
    first_end = int(time.time()) + 3600
    game.call("subscribe", player, SUBSCRIPTION, True, first_end)
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert lc["status"] == "active" and lc["expires_at"] is not None
    ends = lc["expires_at"]
    # Renewed: the platform reports the next period's end; the license follows it.
    second_end = first_end + 600
    game.call("subscribe", player, SUBSCRIPTION, True, second_end)
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert lc["expires_at"] > ends and lc["status"] == "active"
    # The same status again (a rejoin) changes nothing and sends nothing.
    before = len(game.sent)
    game.call("subscribe", player, SUBSCRIPTION, True, second_end)
    assert len(game.sent) == before
    # Lapsed: the hub leaves the license alone, and it expires at the end it was given.
    game.call("subscribe", player, SUBSCRIPTION, False, second_end)
    assert len(game.sent) == before
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert (lc["status"], _unix(lc["expires_at"])) == ("active", second_end)
    end_a_minute_ago(server.database_url, shop.monthly, str(buyer))
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert lc["status"] == "expired"
    # Subscribing again renews the expired license back into force.
    third_end = second_end + 3600  # the next period, after the one that lapsed
    game.call("subscribe", player, SUBSCRIPTION, True, third_end)
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert lc["status"] == "active"


def test_a_subscriber_whose_period_has_ended_gets_an_hour_while_the_payment_is_pending(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    buyer = user()
    game.call("setSubscription", buyer, SUBSCRIPTION, True, int(time.time()) - 60)
    before = int(time.time())
    game.call("join", buyer)
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert lc["status"] == "active"
    assert before + 3600 <= _unix(lc["expires_at"]) <= int(time.time()) + 3600


def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_without_subscription_details_the_term_is_the_catalogs(
        server: Server, shop: Shop, gate: Gate) -> None:
    """An engine without GetUserSubscriptionDetailsAsync or UserSubscriptionStatusChanged:
    the status is read on join, and the license runs for the catalog's term."""
    game = vm(shop, subscription_details=False, subscription_event=False)
    catalog = shop.catalog()
    catalog[shop.monthly]["subscriptionDays"] = 7
    game.hub(gate.url, catalog)
    buyer = user()
    game.call("setSubscription", buyer, SUBSCRIPTION, True)
    before = int(time.time())
    game.call("join", buyer)
    (lc,) = held(server, shop, shop.monthly, buyer)
    assert lc["status"] == "active"
    ends = _unix(lc["expires_at"])
    assert before + 7 * 86400 <= ends <= int(time.time()) + 7 * 86400


# -- the studio key ---------------------------------------------------------------------------


def test_the_studio_key_never_appears_in_a_log_or_a_request_body(
        server: Server, shop: Shop, gate: Gate) -> None:
    game = vm(shop)
    game.hub(gate.url, shop.catalog())
    buyer = user()
    gate.down()
    game.deliver(buyer, DEV_PRODUCT, purchase_id())
    gate.up()
    gate.mode = "429"
    game.deliver(buyer, DEV_PRODUCT, purchase_id())
    gate.mode = "forward"
    game.deliver(buyer, DEV_PRODUCT, purchase_id())
    game.call("ownPass", buyer, GAME_PASS)
    game.call("join", buyer)
    assert game.logs and game.sent and gate.arrived
    key = shop.key
    for line in game.logs:
        assert key not in line
    for s in game.sent:
        assert key not in s.body and key not in s.url
    for a in gate.arrived:
        assert key.encode() not in a.body and key not in a.path
        # It travels only where it belongs, as the bearer token.
        assert a.headers["Authorization"] == f"Bearer {key}"
    # The server's own log does not hold it either.
    assert key not in server.log()


def test_the_secret_is_never_a_string_in_the_place(shop: Shop) -> None:
    """The Authorization value the kit hands RequestAsync is the Secret itself: printing it
    shows only its name, and concatenating it fails, as a Roblox Secret does."""
    game = vm(shop)
    hub = game.hub("http://127.0.0.1:9", {})
    secret = hub.get("_cfg").get("authorization")
    assert not isinstance(secret, str | bytes)
    tostring = game.lua.globals().get("tostring")
    assert bytes(tostring(secret)[0].as_bytes()) == f"Secret({SECRET_NAME})".encode()
    concat = game.lua.load_chunk(
        "local s = ...; return (pcall(function() return 'Bearer ' .. s end))", "concat")
    assert concat(secret) == [False]


def test_a_missing_secret_stops_the_hub_at_start(shop: Shop) -> None:
    game = HubVM(secrets={})
    with pytest.raises(Exception, match="Can't find secret"):
        game.hub("http://127.0.0.1:9", shop.catalog())


def test_a_catalog_selling_one_platform_id_twice_is_refused(shop: Shop) -> None:
    game = vm(shop)
    with pytest.raises(Exception, match="sold by subscription, so by nothing else"):
        game.hub("http://127.0.0.1:9", {"p": {"subscription": "S", "gamePass": 5}})
    with pytest.raises(Exception, match="developer product sold twice"):
        game.hub("http://127.0.0.1:9", {"p": {"developerProduct": 5},
                                          "q": {"developerProduct": 5}})


def test_the_partner_api_answers_the_grant_the_kit_sends(server: Server, shop: Shop) -> None:
    """Guards the kit's assumptions about the server: a repeat grant is `409 already_owned`
    (or, with idempotency keys, the first answer replayed)."""
    body = {"product_id": shop.sold, "user": str(user())}
    headers = {**auth(shop.key), "Idempotency-Key": purchase_id()}
    first = httpx.post(f"{server.url}/v1/licenses", json=body, headers=headers)
    again = httpx.post(f"{server.url}/v1/licenses", json=body, headers=headers)
    assert first.status_code == 200
    assert again.status_code == 200 or (again.status_code == 409
                                        and again.json()["error"] == "already_owned")




# -- the example hub --------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hub"


def _filled_in(root: Inst, shop: Shop, api_url: str) -> None:
    """What a seller does to examples/hub: their licore URL, products and platform ids."""
    catalog = root.child("ReplicatedStorage").child("HubCatalog")
    assert catalog.source is not None
    catalog.source = (catalog.source
                      .replace("prd_REPLACE_ME_1", shop.sold)
                      .replace("prd_REPLACE_ME_2", shop.pass_product)
                      .replace("prd_REPLACE_ME_3", shop.monthly)
                      .replace("developerProduct = 0", f"developerProduct = {DEV_PRODUCT}")
                      .replace("gamePass = 0", f"gamePass = {GAME_PASS}")
                      .replace('"EXP-REPLACE_ME"', f'"{SUBSCRIPTION}"'))
    server = root.child("ServerScriptService").child("HubServer")
    assert server.source is not None and "https://licore.example.com" in server.source
    server.source = server.source.replace("https://licore.example.com", api_url)


def test_the_example_hub_synced_by_rojo_sells(server: Server, shop: Shop, gate: Gate) -> None:
    root = rojo_tree(EXAMPLE)
    assert root is not None
    sss = root.child("ServerScriptService")
    assert sss.child("Licore").class_name == "ModuleScript"
    assert sss.child("Licore").child("Hub").class_name == "ModuleScript"
    assert sss.child("HubServer").class_name == "Script"
    assert root.child("ReplicatedStorage").child("HubCatalog").class_name == "ModuleScript"
    shop_ui = root.child("StarterPlayer").child("StarterPlayerScripts").child("HubShop")
    assert shop_ui.class_name == "LocalScript"
    _filled_in(root, shop, gate.url)
    game = HubVM(secrets={SECRET_NAME: shop.key}, tree=root)
    assert game.place is not None
    game.place.run(sss.child("HubServer"))
    buyer = user()
    assert game.deliver(buyer, DEV_PRODUCT, purchase_id()) == "ReceiptDecision.Processed"
    assert len(held(server, shop, shop.sold, buyer)) == 1
    game.call("ownPass", buyer, GAME_PASS)
    game.call("join", buyer)
    assert len(held(server, shop, shop.pass_product, buyer)) == 1
