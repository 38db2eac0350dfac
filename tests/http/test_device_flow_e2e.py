"""The device flow over real HTTP against a real `licore serve`, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import os

import attrs
import httpx
import pytest

from licore.device_flow import DeviceState
from licore.errors import ApprovalRefused, ClientDisabled
from licore.services.deps import Deps
from licore.services.wiring import UseCases
from licore.tokens import device_code_digest
from tests.http.e2e import (
    People,
    add_client,
    auth,
    core,
    decide,
    obtain_key,
    poll,
    set_client_disabled,
    setup_people,
    start_flow,
)
from tests.support.server import Server

STUDIO_SCOPES = "products:read products:write licenses:read licenses:write"


@pytest.fixture(scope="module")
def people(server: Server) -> People:
    return setup_people(server.database_url, "7")


def test_studio_key_flow_pending_slow_down_approval_and_one_claim(
        server: Server, people: People) -> None:
    flow = start_flow(server, people.client_id, STUDIO_SCOPES)
    assert flow["expires_in"] == 600 and flow["interval"] == 5
    assert flow["verification_uri"] == f"{server.url}/device"
    assert flow["verification_uri_complete"] == f"{server.url}/device?code={flow['user_code']}"
    assert len(flow["user_code"]) == 9 and flow["user_code"][4] == "-"

    first = poll(server, flow["device_code"])
    assert (first.status_code, first.json()["error"]) == (400, "authorization_pending")
    fast = poll(server, flow["device_code"])
    assert (fast.status_code, fast.json()["error"]) == (400, "slow_down")
    assert fast.json()["interval"] == 10

    granted = decide(server.database_url, people.owner_id, flow["user_code"].lower(), True,
                     people.studio_id)
    assert set(granted) == set(STUDIO_SCOPES.split())
    token = poll(server, flow["device_code"])
    assert token.status_code == 200, token.text
    body = token.json()
    assert body["token_type"] == "Bearer" and body["studio_id"] == people.studio_id
    assert set(body["scope"].split()) == set(STUDIO_SCOPES.split())
    assert body["access_token"].startswith("lcs_")
    assert token.headers["cache-control"] == "no-store"

    again = poll(server, flow["device_code"])
    assert (again.status_code, again.json()["error"]) == (400, "expired_token")
    assert "access_token" not in again.text

    listed = httpx.get(f"{server.url}/v1/products", headers=auth(body["access_token"]))
    assert listed.status_code == 200 and listed.json() == {"products": []}


def test_collaborator_approval_filters_scopes_and_nothing_surviving_is_403(
        server: Server, people: People) -> None:
    flow = start_flow(server, people.client_id, STUDIO_SCOPES)
    granted = decide(server.database_url, people.helper_id, flow["user_code"], True,
                     people.studio_id)
    assert set(granted) == {"licenses:read", "licenses:write"}
    body = poll(server, flow["device_code"]).json()
    assert set(body["scope"].split()) == {"licenses:read", "licenses:write"}
    products = httpx.get(f"{server.url}/v1/products", headers=auth(body["access_token"]))
    assert products.status_code == 403 and products.json()["error"] == "insufficient_scope"
    assert 'error="insufficient_scope"' in products.headers["www-authenticate"]
    assert 'scope="products:read"' in products.headers["www-authenticate"]

    only_products = start_flow(server, people.client_id, "products:read")
    with pytest.raises(ApprovalRefused) as refused:
        decide(server.database_url, people.helper_id, only_products["user_code"], True,
               people.studio_id)
    assert refused.value.status == 403
    still = poll(server, only_products["device_code"])
    assert still.json()["error"] == "authorization_pending"


def test_library_key_flow_and_key_kinds_do_not_cross(server: Server, people: People) -> None:
    flow = start_flow(server, people.client_id, "library:read library:download")
    decide(server.database_url, people.buyer_id, flow["user_code"], True, people.studio_id)
    body = poll(server, flow["device_code"]).json()
    assert body["studio_id"] is None and body["access_token"].startswith("lcl_")
    assert body["scope"] == "library:read library:download"
    lib = httpx.get(f"{server.url}/v1/library", headers=auth(body["access_token"]))
    assert lib.status_code == 200 and lib.json() == {"products": []}
    studio_call = httpx.get(f"{server.url}/v1/products", headers=auth(body["access_token"]))
    assert studio_call.status_code == 403
    assert studio_call.json()["error"] == "insufficient_scope"

    studio_key = obtain_key(server, people, "products:read", people.owner_id, people.studio_id)
    lib_with_studio = httpx.get(f"{server.url}/v1/library", headers=auth(studio_key))
    assert lib_with_studio.status_code == 403


def test_denied_gives_access_denied(server: Server, people: People) -> None:
    flow = start_flow(server, people.client_id, "library:read")
    decide(server.database_url, people.buyer_id, flow["user_code"], False)
    r = poll(server, flow["device_code"])
    assert (r.status_code, r.json()["error"]) == (400, "access_denied")


def test_expired_after_lifetime_gives_expired_token(server: Server, people: People) -> None:
    flow = start_flow(server, people.client_id, "library:read")

    async def age(d: Deps) -> None:
        async with d.storage.unit_of_work() as uow:
            record = await uow.devices.by_code_digest(device_code_digest(flow["device_code"]))
            assert record is not None
            past = attrs.evolve(record, created_at=record.created_at - 601,
                                expires_at=record.expires_at - 601)
            await uow.devices.replace(past, expected=DeviceState.PENDING)

    core(server.database_url, age)
    r = poll(server, flow["device_code"])
    assert (r.status_code, r.json()["error"]) == (400, "expired_token")
    with pytest.raises(Exception, match="no longer waiting"):
        decide(server.database_url, people.buyer_id, flow["user_code"], True)


def test_unknown_device_code_is_expired_token(server: Server) -> None:
    r = poll(server, "not-a-real-code")
    assert (r.status_code, r.json()["error"]) == (400, "expired_token")


@pytest.fixture(scope="module")
def narrow_client(server: Server) -> str:
    return add_client(server.database_url, "Reader", "Reads",
               "library:read")


@pytest.mark.parametrize(("body", "error", "field"), [
    ({"scope": "library:read"}, "invalid_request", "client_id"),
    ({"client_id": "CLIENT"}, "invalid_request", "scope"),
    ({"client_id": "app_nope", "scope": "library:read"}, "invalid_client", None),
    ({"client_id": "NARROW", "scope": "products:read products:write"}, "invalid_scope", None),
    ({"client_id": "CLIENT", "scope": "nonsense:scope"}, "invalid_scope", None),
    ({"client_id": "CLIENT", "scope": "library:read products:read"}, "invalid_scope", None),
    ({"client_id": "CLIENT", "scope": 5}, "invalid_request", "scope"),
    # an unknown field is ignored (RFC 6749 section 3.2), a known one still checked
    ({"client_id": "CLIENT", "scope": 5, "extra": 1}, "invalid_request", "scope"),
])
def test_device_code_errors(server: Server, people: People, narrow_client: str,
                            body: dict[str, object], error: str, field: str | None) -> None:
    names = {"CLIENT": people.client_id, "NARROW": narrow_client}
    sent = {k: names.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    r = httpx.post(f"{server.url}/auth/device/code", json=sent)
    assert (r.status_code, r.json()["error"]) == (400, error), r.text
    if field:
        assert field in r.json()["error_description"]


def test_device_code_rejects_non_json_and_disabled_clients(server: Server,
                                                           people: People) -> None:
    r = httpx.post(f"{server.url}/auth/device/code", content=b"{not json",
                   headers={"content-type": "application/json"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_request")
    other = add_client(server.database_url, "Old", "x",
                "library:read")
    flow = start_flow(server, other, "library:read")
    decide(server.database_url, people.buyer_id, flow["user_code"], True, None)
    key = poll(server, flow["device_code"]).json()["access_token"]
    assert httpx.get(f"{server.url}/v1/library", headers=auth(key)).status_code == 200
    set_client_disabled(server.database_url, other, True)
    r = httpx.post(f"{server.url}/auth/device/code", json={"client_id": other,
                                                           "scope": "library:read"})
    assert (r.status_code, r.json()["error"]) == (400, "invalid_client")
    # Its keys stopped working with it, and enabling it again does not bring them back.
    assert httpx.get(f"{server.url}/v1/library", headers=auth(key)).status_code == 401
    set_client_disabled(server.database_url, other, False)
    assert httpx.get(f"{server.url}/v1/library", headers=auth(key)).status_code == 401
    assert start_flow(server, other, "library:read")["user_code"]


def test_form_encoding_basic_auth_and_grant_type(server: Server, people: People) -> None:
    basic = base64.b64encode(f"{people.client_id}:".encode()).decode()
    r = httpx.post(f"{server.url}/auth/device/code", data={"scope": "library:read"},
                   headers={"Authorization": f"Basic {basic}"})
    assert r.status_code == 200, r.text
    code = r.json()["device_code"]
    wrong = httpx.post(f"{server.url}/auth/device/token",
                       data={"device_code": code, "grant_type": "authorization_code"})
    assert (wrong.status_code, wrong.json()["error"]) == (400, "unsupported_grant_type")
    right = httpx.post(f"{server.url}/auth/device/token", data={
        "device_code": code, "client_id": people.client_id,
        "grant_type": "urn:ietf:params:oauth:grant-type:device_code"})
    assert right.json()["error"] in ("authorization_pending", "slow_down")


def test_revoke_is_effective_on_the_next_request(server: Server, people: People) -> None:
    key = obtain_key(server, people, "products:read", people.owner_id, people.studio_id)
    assert httpx.get(f"{server.url}/v1/products", headers=auth(key)).status_code == 200
    r = httpx.post(f"{server.url}/auth/revoke", headers=auth(key))
    assert r.status_code == 200 and r.json() == {"ok": True}
    after = httpx.get(f"{server.url}/v1/products", headers=auth(key))
    assert after.status_code == 401 and after.json()["error"] == "invalid_token"
    assert 'error="invalid_token"' in after.headers["www-authenticate"]
    again = httpx.post(f"{server.url}/auth/revoke", headers=auth(key))
    assert again.status_code == 401
    form = httpx.post(f"{server.url}/auth/revoke", data={"token": "whatever"})
    assert form.status_code == 200


def test_missing_and_unknown_keys_are_invalid_token(server: Server) -> None:
    none = httpx.get(f"{server.url}/v1/products")
    assert none.status_code == 401 and none.json()["error"] == "invalid_token"
    assert none.headers["www-authenticate"] == "Bearer"
    fake = httpx.get(f"{server.url}/v1/products", headers=auth("lcs_" + "A" * 36))
    assert fake.status_code == 401 and "error=" in fake.headers["www-authenticate"]


def test_discovery_document(server: Server) -> None:
    doc = httpx.get(f"{server.url}/.well-known/oauth-authorization-server").json()
    assert doc["device_authorization_endpoint"] == f"{server.url}/auth/device/code"
    assert doc["token_endpoint"] == f"{server.url}/auth/device/token"
    assert doc["revocation_endpoint"] == f"{server.url}/auth/revoke"


def test_stock_oauth_client_completes_the_flow(server: Server, people: People) -> None:
    """Authlib's requests client, with no licore code on the client side."""
    from authlib.integrations.requests_client import OAuth2Session

    os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")
    session = OAuth2Session(client_id=people.client_id, scope="library:read library:download",
                            token_endpoint_auth_method="none")
    meta = session.get(f"{server.url}/.well-known/oauth-authorization-server",
                       withhold_token=True).json()
    started = session.post(meta["device_authorization_endpoint"], withhold_token=True,
                           data={"client_id": people.client_id,
                                 "scope": "library:read library:download"}).json()
    decide(server.database_url, people.buyer_id, started["user_code"], True)
    token = session.fetch_token(meta["token_endpoint"],
                                grant_type="urn:ietf:params:oauth:grant-type:device_code",
                                device_code=started["device_code"])
    assert token["token_type"] == "Bearer" and token["scope"] == "library:read library:download"
    lib = session.get(f"{server.url}/v1/library")
    assert lib.status_code == 200 and lib.json() == {"products": []}


def test_disabling_an_app_fails_its_pending_flows_and_revokes_its_keys(
        server: Server, people: People) -> None:
    """Issue 13, case 4: a flow pending (or approved, not yet claimed) when the operator
    disables the app gives no key: the poll is `invalid_client`, approval is refused, and
    every key the app already had is revoked."""
    app = add_client(server.database_url, "Doomed", "x",
              "library:read")
    held = start_flow(server, app, "library:read")
    decide(server.database_url, people.buyer_id, held["user_code"], True)
    key = poll(server, held["device_code"]).json()["access_token"]
    pending = start_flow(server, app, "library:read")
    approved = start_flow(server, app, "library:read")
    decide(server.database_url, people.buyer_id, approved["user_code"], True)
    set_client_disabled(server.database_url, app, True)
    for flow in (pending, approved):
        r = poll(server, flow["device_code"])
        assert (r.status_code, r.json()["error"]) == (400, "invalid_client"), r.text
        assert "disabled" in r.json()["error_description"]
    with pytest.raises(ClientDisabled):
        decide(server.database_url, people.buyer_id, pending["user_code"], True)
    with pytest.raises(ClientDisabled):  # the consent screen is a refusal page too
        core(server.database_url,
             lambda d: UseCases.of(d).device.pending_view(pending["user_code"]))
    assert httpx.get(f"{server.url}/v1/library", headers=auth(key)).status_code == 401

    async def states(d: Deps) -> list[DeviceState]:
        async with d.storage.unit_of_work() as uow:
            found = [await uow.devices.by_code_digest(device_code_digest(f["device_code"]))
                     for f in (pending, approved)]
        return [f.state for f in found if f is not None]

    # Nothing was claimed: the approved one stays approved and can never be claimed.
    assert core(server.database_url, states) == [DeviceState.PENDING, DeviceState.APPROVED]
    set_client_disabled(server.database_url, app, False)
    assert httpx.get(f"{server.url}/v1/library", headers=auth(key)).status_code == 401
