"""The Luau client verifies Python-sealed runtime answers served by an injected http function.

`FakeRuntime` stands in for the server; a real-HTTP function with the same signature
(`(url, json_body) -> (ok, status, text)`) can replace it for end-to-end runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from licore.sealing import seal
from tests.sdk.luau_sdk import LuauSdk, method

KEY = "LIC-TEST-0001"
NOW = 1_700_000_000
NONCE_A = "a" * 16 + "0001"
NONCE_B = "b" * 16 + "0002"


class FakeRuntime:
    """Answers like the runtime API would, sealing with licore.sealing; can be tampered."""

    def __init__(self, license_key: str = KEY) -> None:
        self.license_key = license_key
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.tamper: str | None = None
        self.exp_offset = 300
        self.echo_nonce: str | None = None

    def _sealed(self, nonce: str, payload: dict[str, Any]) -> dict[str, Any]:
        payload = {"nonce": self.echo_nonce or nonce, **payload}
        sealed = seal(self.license_key, nonce, json.dumps(payload).encode("utf-8"))
        cipher, tag = sealed.cipher, sealed.tag
        if self.tamper == "cipher":
            cipher = f"{int(cipher[:2], 16) ^ 0x01:02x}" + cipher[2:]
        elif self.tamper == "tag":
            tag = tag[:-2] + f"{int(tag[-2:], 16) ^ 0x80:02x}"
        return {"cipher": cipher, "tag": tag}

    def __call__(self, url: str, body: str) -> tuple[bool, int, str]:
        req = json.loads(body)
        path = url.rsplit("/runtime", 1)[1]
        self.requests.append((path, req))
        if path == "/check":
            answer: dict[str, Any] = {"success": req["key"] == self.license_key}
        elif path == "/unlock":
            answer = {"ok": True, "exp": NOW + self.exp_offset}
            answer |= self._sealed(req["nonce"], {"data": {"tier": "gold", "n": 7}})
        elif path == "/version":
            answer = {"ok": True, "latest": "2.0", "update": req.get("current") != "2.0",
                      "fileId": "f-2"}
        elif path == "/update":
            nodes = [{"ClassName": "Folder", "Name": "Root", "Properties": {}, "Children": []}]
            answer = {"ok": True, "version": "2.0", "update": True}
            answer |= self._sealed(req["nonce"], {"version": "2.0", "instances": nodes})
        else:
            return True, 404, "{}"
        return True, 200, json.dumps(answer)


@pytest.fixture()
def sdk() -> LuauSdk:
    return LuauSdk()


def test_genuine_unlock_yields_data_and_sends_spec_body(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    client = sdk.client(server, license_key=KEY, nonces=[NONCE_A], now=NOW, gameId=99)
    data, reason = method(client, "unlock", 42)
    assert reason is None
    assert sdk.to_python(data) == {"tier": "gold", "n": 7}
    path, body = server.requests[0]
    assert path == "/unlock"
    assert body == {"user_id": 42, "product_id": "prod-1", "key": KEY, "nonce": NONCE_A,
                    "game_id": 99}


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ("cipher", "tag_mismatch"),
        ("tag", "tag_mismatch"),
        ("other_license", "tag_mismatch"),
        ("swapped_nonce", "tag_mismatch"),
        ("echo_other_nonce", "nonce_mismatch"),
        ("expired", "expired"),
    ],
)
def test_forged_unlock_is_refused_with_reason(sdk: LuauSdk, setup: str, reason: str) -> None:
    server = FakeRuntime(license_key="LIC-SOMEONE-ELSE" if setup == "other_license" else KEY)
    nonces = [NONCE_A]
    if setup in ("cipher", "tag"):
        server.tamper = setup
    elif setup == "expired":
        server.exp_offset = -1
    elif setup == "echo_other_nonce":
        server.echo_nonce = NONCE_B
    elif setup == "swapped_nonce":
        # Replays an answer sealed for another request's nonce.
        def replay(url: str, body: str) -> tuple[bool, int, str]:
            return FakeRuntime()(url, body.replace(NONCE_A, NONCE_B))

        client = sdk.client(replay, license_key=KEY, nonces=nonces, now=NOW)
        assert method(client, "unlock", 42) == [None, reason]
        return
    client = sdk.client(server, license_key=KEY, nonces=nonces, now=NOW)
    assert method(client, "unlock", 42) == [None, reason]


def test_unlock_at_exact_exp_is_still_valid(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    server.exp_offset = 0
    client = sdk.client(server, license_key=KEY, nonces=[NONCE_A], now=NOW)
    assert method(client, "unlock", 42)[1] is None


def test_refused_unlock_body_is_reported(sdk: LuauSdk) -> None:
    def refuse(url: str, body: str) -> tuple[bool, int, str]:
        return True, 200, '{"ok": false}'

    client = sdk.client(refuse, license_key=KEY, nonces=[NONCE_A], now=NOW)
    assert method(client, "unlock", 42) == [None, "refused"]


def test_genuine_update_returns_nodes_and_records_build(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    client = sdk.client(server, license_key=KEY, nonces=[NONCE_A], now=NOW)
    nodes, reason = method(client, "update", "1.0")
    assert reason is None
    assert sdk.to_python(nodes)[0]["Name"] == "Root"
    assert sdk.to_python(client.get("build"))["version"] == "2.0"
    assert server.requests[0][1]["current"] == "1.0"


@pytest.mark.parametrize("tamper", ["cipher", "tag"])
def test_tampered_update_leaves_prior_build(sdk: LuauSdk, tamper: str) -> None:
    server = FakeRuntime()
    client = sdk.client(server, license_key=KEY, nonces=[NONCE_A, NONCE_B], now=NOW)
    assert method(client, "update", "1.0")[1] is None
    before = sdk.to_python(client.get("build"))
    server.tamper = tamper
    assert method(client, "update", "2.0") == [None, "tag_mismatch"]
    assert sdk.to_python(client.get("build")) == before


def test_two_checks_make_one_request(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    client = sdk.client(server, license_key=KEY, nonces=[], now=NOW)
    assert method(client, "check", 42) == [True]
    assert method(client, "check", 42) == [True]
    assert [p for p, _ in server.requests] == ["/check"]


def test_version_is_fetched_once(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    client = sdk.client(server, license_key=KEY, nonces=[], now=NOW)
    first = sdk.to_python(method(client, "latestVersion", "1.0")[0])
    second = sdk.to_python(method(client, "latestVersion", "1.0")[0])
    assert first == second == {"latest": "2.0", "update": True, "fileId": "f-2"}
    assert len(server.requests) == 1


def test_a_client_on_the_beta_channel_names_it_and_one_without_names_none(
        sdk: LuauSdk) -> None:
    server = FakeRuntime()
    beta = sdk.client(server, license_key=KEY, nonces=[NONCE_A], now=NOW, channel="beta")
    assert method(beta, "latestVersion", "1.0")[1] is None
    assert method(beta, "update", "1.0")[1] is None
    plain = sdk.client(server, license_key=KEY, nonces=[NONCE_B], now=NOW)
    assert method(plain, "latestVersion")[1] is None
    assert method(plain, "update", "1.0")[1] is None
    assert [(path, body.get("channel")) for path, body in server.requests] == [
        ("/version", "beta"), ("/update", "beta"), ("/version", None), ("/update", None)]
    # The specification's body, exactly, when no channel is configured.
    assert set(server.requests[2][1]) == {"user_id", "product_id", "key"}


def test_http_failure_is_retried_with_growing_backoff(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    failures = [0]

    def flaky(url: str, body: str) -> tuple[bool, int, str]:
        if failures[0] < 2:
            failures[0] += 1
            return False, 0, ""
        return server(url, body)

    sleeps: list[float] = []
    client = sdk.client(flaky, license_key=KEY, nonces=[NONCE_A], now=NOW, sleeps=sleeps)
    assert method(client, "unlock", 42)[1] is None
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0]


def test_steady_state_requests_are_capped_per_minute(sdk: LuauSdk) -> None:
    server = FakeRuntime()
    nonces = [f"{i:020d}" for i in range(20)]
    client = sdk.client(server, license_key=KEY, nonces=nonces, now=NOW)
    reasons = [method(client, "unlock", 42)[1] for _ in range(20)]
    assert len(server.requests) <= 6
    assert "rate_limited" in reasons
