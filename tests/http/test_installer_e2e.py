"""The Studio installer plugin (sdk/installer) in the real Luau VM against a real
`licore serve`: the plugin's own entry script runs with stand-ins of `plugin` and the Studio
services (tests/sdk/installer_vm.py), its HTTP goes to the server over loopback through a host
callback, and the buyer approves the sign-in over HTTP on the server's approval page, reading
the code from the plugin's widget as a person would."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore.builds.nodes import to_nodes
from licore.builds.tree import Prop
from licore.device_flow import DeviceState
from licore.services.deps import Deps
from licore.tokens import device_code_digest
from tests.http.e2e import (
    People,
    add_client,
    auth,
    core,
    license_key,
    owner_key,
    setup_people,
)
from tests.http.test_runtime_e2e import ALL, v1
from tests.sdk.installer_vm import StudioVM, call, items
from tests.support.models import LICENSE_SCRIPT, PLACEHOLDER, product_model
from tests.support.server import Server

CODEC = RobloxModelCodec()
BUYER_PASSWORD = "buyer-password"  # setup_people's


@attrs.frozen
class World:
    people: People
    buyer_name: str
    studio_key: str
    product: str
    client_id: str


def _upload(server: Server, key: str, product: str, label: str, *, greeting: str) -> str:
    model = product_model()
    # Each version differs in a script the buyer can see, so a test can tell them apart.
    greeter = model.roots[0].children[1]
    greeter.properties["Source"] = Prop("String", f"print({greeting!r})\n".encode())
    r = httpx.post(f"{server.url}/v1/packages/versions", headers=auth(key),
                   params={"product_id": product, "version": label}, content=CODEC.write(model))
    assert r.status_code == 200, r.text
    version_id: str = r.json()["version"]["id"]
    v1(server, "POST", "/packages/publish", key,
       json={"product_id": product, "version_id": version_id})
    return version_id


@pytest.fixture(scope="module")
def world(server: Server) -> World:
    people = setup_people(server.database_url, "9")
    key = owner_key(server, people, ALL)
    product = v1(server, "POST", "/products", key, json={"title": "Door Kit"}).json()["id"]
    # The seller keeps scripts as written ({} rules), so the copy shows the buyer's key
    # where the placeholder was.
    v1(server, "POST", "/packages/settings", key, json={"product_id": product, "protection": {}})
    _upload(server, key, product, "1.0", greeting="one")
    v1(server, "POST", "/licenses", key, json={"product_id": product, "user": "29"})
    # The installer as its operator registers it: library scopes only.
    client = add_client(server.database_url, "Studio installer",
                        "Inserts products you own into Studio", "library:read library:download")
    return World(people, "buyer9", key, product, client)


# The person's side: the approval page over HTTP ---------------------------------------------


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


def decide_on_the_website(server: Server, user_code: str, decision: str) -> None:
    """What the buyer does in a browser: sign in, open the approval page with the code the
    plugin shows, and approve (or deny)."""
    with httpx.Client(base_url=server.url) as web:
        signed = web.post("/signin", data={"csrf": _csrf(web.get("/signin").text),
                                           "username": "buyer9", "password": BUYER_PASSWORD})
        assert signed.status_code == 303, signed.text
        # The link the plugin shows opens the entry page with the code filled in; the
        # person continues to the consent page, then decides.
        entry = web.get("/device", params={"code": user_code})
        assert entry.status_code == 200, entry.text
        consent = web.post("/device", data={"csrf": _csrf(entry.text), "code": user_code})
        assert consent.status_code == 200, consent.text
        decided = web.post("/device/decide", data={"csrf": _csrf(consent.text),
                                                   "code": user_code, "decision": decision})
        assert decided.status_code in (200, 303), decided.text


# Running the plugin ---------------------------------------------------------------------------


@attrs.define
class Session:
    vm: StudioVM
    widget: Any
    seen: list[tuple[str, str, bool]] = attrs.Factory(list)  # (code, link, link shown) per wait

    def press(self, name: str, within: Any = None) -> None:
        self.vm.click(self.vm.find(within or self.widget, name))

    def text(self, name: str, within: Any = None) -> str:
        return self.vm.text(within or self.widget, name)


@pytest.fixture
def studio(server: Server, world: World) -> Iterator[Callable[..., Session]]:
    made: list[StudioVM] = []

    def start(*, approve_on_wait: int | None = 3, decision: str = "approve",
              serialization: bool = True, deserialize_fails: bool = False,
              during_wait: Callable[[Session, int], None] | None = None) -> Session:
        session: Session | None = None

        def on_wait(_seconds: float) -> None:
            assert session is not None
            n = len(session.vm.waits)
            code = session.text("UserCode").removeprefix("Your code: ")
            session.seen.append((code, session.text("Link"), session.vm.visible(
                session.widget, "Link")))
            if during_wait is not None:
                during_wait(session, n)
            if n == approve_on_wait:
                decide_on_the_website(server, code, decision)

        vm = StudioVM(serialization=serialization, deserialize_fails=deserialize_fails,
                      on_wait=on_wait,
                      config={"serverUrl": server.url, "clientId": world.client_id})
        made.append(vm)
        session = Session(vm, vm.start())
        return session

    yield start
    for vm in made:
        vm.close()


def token_of(session: Session) -> str | None:
    kept = [v for k, v in session.vm.settings().items() if k.startswith("licore.accessToken")]
    return None if not kept or kept[0] is None else str(kept[0])


def sign_in(session: Session) -> str:
    session.press("SignIn")
    token = token_of(session)
    assert token is not None, session.text("Status")
    return token


def row(session: Session, product: str) -> Any:
    return session.vm.find(session.vm.find(session.widget, "Library"), product)


def scripts_under(vm: StudioVM, root: Any) -> dict[str, str]:
    out = {}
    for inst in [root, *items(call(root, "GetDescendants"))]:
        source = inst.get("Source")
        if source is not None:
            out[str(inst.get("Name"))] = bytes(source.as_bytes()).decode() \
                if not isinstance(source, str) else source
    return out


# Scenarios ------------------------------------------------------------------------------------


def test_signing_in_shows_the_code_and_link_honours_slow_down_and_keeps_the_key_in_settings(
        server: Server, world: World, studio: Callable[..., Session]) -> None:
    s = studio(approve_on_wait=3)
    assert s.vm.visible(s.widget, "SignIn") and not s.vm.visible(s.widget, "Library")
    key = sign_in(s)
    # Waits: 5 s (pending), 5 s (the server said slow_down: polled too soon, as waits here
    # return at once), then 10 s: the interval grew by five seconds.
    assert s.vm.waits == [5, 5, 10]
    code, link, shown = s.seen[0]
    assert re.fullmatch(r"[A-Z]{4}-[A-Z]{4}", code)
    assert link == f"{server.url}/device?code={code}" and shown
    assert key.startswith("lcl_")
    # Signed in: the code and link are gone, the library shows, and the key is nowhere in
    # the widget.
    assert s.text("Status") == "Signed in."
    assert not s.vm.visible(s.widget, "Link") and s.vm.visible(s.widget, "Library")
    assert httpx.get(f"{server.url}/v1/library", headers=auth(key)).status_code == 200
    # It asked the server for the library scopes only, and never sent a pasted key.
    starts = [r for r in s.vm.requests if r[1].endswith("/auth/device/code")]
    assert len(starts) == 1
    assert "Authorization" not in starts[0][2]


def test_a_declined_sign_in_says_so_and_keeps_no_key(
        world: World, studio: Callable[..., Session]) -> None:
    s = studio(approve_on_wait=1, decision="deny")
    s.press("SignIn")
    assert token_of(s) is None
    assert "declined" in s.text("Status")
    assert s.vm.visible(s.widget, "SignIn")


def test_an_expired_code_says_start_over(server: Server, world: World,
                                         studio: Callable[..., Session]) -> None:
    def expire(session: Session, n: int) -> None:
        if n != 1:
            return
        # The device code as the server sent it (the test is the host: it sees the traffic).
        (started,) = [json.loads(body) for url, _, body in session.vm.answers
                      if url.endswith("/auth/device/code")]

        async def age(d: Deps) -> None:
            async with d.storage.unit_of_work() as uow:
                record = await uow.devices.by_code_digest(
                    device_code_digest(started["device_code"]))
                assert record is not None
                past = attrs.evolve(record, created_at=record.created_at - 601,
                                    expires_at=record.expires_at - 601)
                await uow.devices.replace(past, expected=DeviceState.PENDING)

        core(server.database_url, age)

    s = studio(approve_on_wait=None, during_wait=expire)
    s.press("SignIn")
    assert token_of(s) is None
    assert s.text("Status") == ("The code expired before it was approved. "
                                "Press Sign in for a new code.")


def test_the_library_lists_products_and_insert_puts_the_buyers_copy_under_the_selection(
        server: Server, world: World, studio: Callable[..., Session]) -> None:
    s = studio()
    sign_in(s)
    line = s.text("Title", row(s, world.product))
    assert line == "Door Kit by Studio9, version 1.0"
    # The selection is where the product goes.
    folder = s.vm.lua.globals().get("Instance").get("new")("Folder")[0]
    folder.set("Name", "Gear")
    folder.set("Parent", s.vm.game.get("Workspace"))
    call(s.vm.services.get("Selection"), "Set", s.vm.array([folder]))
    s.press("Insert", row(s, world.product))
    assert s.text("Status").startswith("Inserted Door Kit 1.0 into Gear"), s.text("Status")
    inserted = items(call(folder, "GetChildren"))
    assert len(inserted) == 1
    root = inserted[0]
    assert root.get("Name") == "Product"
    assert call(root, "GetAttribute", "LicoreProductId") == world.product
    assert call(root, "GetAttribute", "LicoreVersion") == "1.0"
    # Through SerializationService, given exactly the file the server gives this buyer.
    download = httpx.get(f"{server.url}/v1/library/download", headers=auth(token_of(s) or ""),
                         params={"product_id": world.product})
    assert s.vm.deserialized == [download.content]
    # The buyer's copy: the key where the placeholder was.
    key = license_key(server, world.product, "29")
    scripts = scripts_under(s.vm, root)
    assert scripts["LicenseCheck"] == LICENSE_SCRIPT.replace(PLACEHOLDER, key)
    assert scripts["Greeter"] == "print('one')\n"
    # One recording, committed, which Undo takes back whole.
    history = s.vm.services.get("ChangeHistoryService")
    committed = history.get("history").get("committed")
    assert len(committed) == 1
    call(history, "Undo")
    assert items(call(folder, "GetChildren")) == []


@pytest.mark.parametrize("why", ["no_service", "unreadable"])
def test_without_a_usable_serialization_service_the_sdk_builder_inserts_the_same_copy(
        server: Server, world: World, studio: Callable[..., Session], why: str) -> None:
    s = studio(serialization=why != "no_service", deserialize_fails=why == "unreadable")
    token = sign_in(s)
    # No selection: the default target, ServerScriptService.
    s.press("Insert", row(s, world.product))
    sss = s.vm.game.get("ServerScriptService")
    roots = items(call(sss, "GetChildren"))
    assert len(roots) == 1, s.text("Status")
    root = roots[0]
    key = license_key(server, world.product, "29")
    scripts = scripts_under(s.vm, root)
    assert scripts["LicenseCheck"] == LICENSE_SCRIPT.replace(PLACEHOLDER, key)
    # Everything the nodes carry, as the SDK builds it (the Part's size, the link's Ref).
    handle = call(root, "FindFirstChild", "Handle")
    assert handle.get("Anchored") is True
    link = call(root, "FindFirstChild", "Link")
    assert link.get("Value") == handle
    nodes_url = [r for r in s.vm.requests if "nodes=tagged" in r[1]]
    assert len(nodes_url) == 1
    answer = httpx.get(f"{server.url}/v1/library/download", headers=auth(token),
                       params={"product_id": world.product, "nodes": "tagged"})
    file = httpx.get(f"{server.url}/v1/library/download", headers=auth(token),
                     params={"product_id": world.product})
    assert answer.json() == {"version": "1.0", "instances": to_nodes(CODEC.read(file.content))}
    assert answer.headers["content-type"].startswith("application/json")
    compact = httpx.get(f"{server.url}/v1/library/download", headers=auth(token),
                        params={"product_id": world.product, "nodes": "compact"})
    assert compact.json() == {"version": "1.0", "instances": to_nodes(
        CODEC.read(file.content), compact=True)}
    bad = httpx.get(f"{server.url}/v1/library/download", headers=auth(token),
                    params={"product_id": world.product, "nodes": "xml"})
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_request")
    assert "nodes" in bad.json()["error_description"]


def test_an_older_version_can_be_inserted_and_update_available_then_replaces_it(
        server: Server, world: World, studio: Callable[..., Session]) -> None:
    s = studio()
    sign_in(s)
    old_id = _versions(server, s, world)[0]
    _upload(server, world.studio_key, world.product, "2.0", greeting="two")
    try:
        s.press("Refresh")
        s.press("ShowVersions", row(s, world.product))
        versions = s.vm.find(row(s, world.product), "Versions")
        assert "Insert 2.0 (live)" in [s.text(c.get("Name"), versions)
                                       for c in items(call(versions, "GetChildren"))
                                       if c.get("ClassName") == "TextButton"]
        s.press(old_id, versions)
        sss = s.vm.game.get("ServerScriptService")
        (root,) = items(call(sss, "GetChildren"))
        assert call(root, "GetAttribute", "LicoreVersion") == "1.0"
        assert scripts_under(s.vm, root)["Greeter"] == "print('one')\n"
        # The list now says a newer version is live than the one inserted.
        note = s.text("UpdateAvailable", row(s, world.product))
        assert note == "Update available: 1.0 is inserted, 2.0 is live."
        s.press("Update", row(s, world.product))
        (new,) = items(call(sss, "GetChildren"))
        assert call(new, "GetAttribute", "LicoreVersion") == "2.0"
        assert scripts_under(s.vm, new)["Greeter"] == "print('two')\n"
        assert new.get("Parent") == sss and root.get("Parent") is None
        assert s.vm.find(row(s, world.product), "Title") is not None  # drawn again
        with pytest.raises(AssertionError):
            s.vm.find(row(s, world.product), "UpdateAvailable")
        # Undo puts the old copy back.
        call(s.vm.services.get("ChangeHistoryService"), "Undo")
        assert [call(r, "GetAttribute", "LicoreVersion")
                for r in items(call(sss, "GetChildren"))] == ["1.0"]
    finally:
        # The other scenarios expect 1.0 live: roll back.
        v1(server, "POST", "/packages/publish", world.studio_key,
           json={"product_id": world.product, "version_id": old_id})


def _versions(server: Server, s: Session, world: World) -> list[str]:
    r = httpx.get(f"{server.url}/v1/library", headers=auth(token_of(s) or ""),
                  params={"product_id": world.product, "versions": "1"})
    return [v["id"] for v in r.json()["versions"]]


def test_signing_out_revokes_the_key_and_a_revoked_key_asks_for_a_new_sign_in(
        server: Server, world: World, studio: Callable[..., Session]) -> None:
    s = studio()
    key = sign_in(s)
    s.press("SignOut")
    assert token_of(s) is None
    assert s.text("Status") == "Signed out; the key was revoked."
    r = httpx.get(f"{server.url}/v1/library", headers=auth(key))
    assert (r.status_code, r.json()["error"]) == (401, "invalid_token")
    assert s.vm.visible(s.widget, "SignIn") and not s.vm.visible(s.widget, "Library")

    # A key revoked elsewhere (the website's connected apps): the next call is a 401, and the
    # plugin forgets the key and asks for a new sign-in (spec section 5 rule 9).
    again = studio()
    other = sign_in(again)
    httpx.post(f"{server.url}/auth/revoke", headers=auth(other))
    again.press("Refresh")
    assert token_of(again) is None
    assert "Sign in again" in again.text("Status")


def test_the_key_is_never_shown_or_printed(server: Server, world: World,
                                           studio: Callable[..., Session]) -> None:
    s = studio()
    key = sign_in(s)
    s.press("Insert", row(s, world.product))
    root = s.vm.find(s.widget, "Root")
    texts = [str(v) for inst in items(call(root, "GetDescendants"))
             for v in (inst.get("Text"),) if v is not None]
    assert texts and not any(key in t for t in texts)
    assert key not in server.log()
