"""The service reports on itself: every log line is JSON with a timestamp, a level and the
request id; the request id comes back on every answer; /metrics counts requests by route."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.server import Server, running_server


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_RUNTIME_IP_RATE_LIMIT="3") as s:
        yield s


def test_request_id_is_echoed_or_made(server: Server) -> None:
    given = httpx.get(f"{server.url}/healthz", headers={"X-Request-ID": "trace-42.a"})
    assert given.headers["x-request-id"] == "trace-42.a"
    made = httpx.get(f"{server.url}/healthz")
    assert re.fullmatch(r"[0-9a-f]{16}", made.headers["x-request-id"])
    # an id that could forge log lines or headers is replaced, not copied
    hostile = httpx.get(f"{server.url}/healthz", headers={"X-Request-ID": 'a" b'})
    assert hostile.headers["x-request-id"] != 'a" b'


def test_every_log_line_is_json_with_time_level_and_request_id(server: Server) -> None:
    httpx.get(f"{server.url}/v1/products", headers={"X-Request-ID": "find-me-1"})
    # The access line is written after the answer is sent: on a busy machine it can land a
    # moment after the client has read the answer.
    deadline = time.monotonic() + 10
    while "find-me-1" not in server.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [line for line in server.log().splitlines() if line.strip()]
    assert lines
    records = [json.loads(line) for line in lines]  # fails on any non-JSON line
    for record in records:
        assert {"timestamp", "level", "logger", "message"} <= set(record)
    mine = [r for r in records if r.get("request_id") == "find-me-1"]
    assert mine and mine[0]["route"] == "/v1/products" and mine[0]["status"] == 401


def test_a_runtime_call_echoes_the_request_id_and_logs_under_it(server: Server) -> None:
    # The runtime calls are answered in front of the middleware stack (RuntimeFront).
    r = httpx.post(f"{server.url}/runtime/check", json={}, headers={"X-Request-ID": "rt-9"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "rt-9"
    deadline = time.monotonic() + 10
    while '"rt-9"' not in server.log() and time.monotonic() < deadline:
        time.sleep(0.05)
    records = [json.loads(line) for line in server.log().splitlines() if line.strip()]
    mine = [r for r in records if r.get("request_id") == "rt-9"]
    assert [(m["route"], m["status"]) for m in mine] == [("/runtime/check", 200)]


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_count_routes_statuses_runtime_outcomes_and_refusals(server: Server) -> None:
    before = httpx.get(f"{server.url}/metrics").text
    httpx.post(f"{server.url}/runtime/check", content=b"{not json")
    for _ in range(2):
        httpx.get(f"{server.url}/v1/licenses")
    call = {"key": "no-such-key", "product_id": "prd_x", "user_id": 1, "game_id": 2}
    server.next_window()  # the IP limit is 3 a minute here: a minute of its own
    answers = [httpx.post(f"{server.url}/runtime/check", json=call).status_code
               for _ in range(5)]
    after = httpx.get(f"{server.url}/metrics").text

    def grew(name: str, **labels: str) -> float:
        return _metric(after, name, **labels) - _metric(before, name, **labels)

    assert grew("licore_http_requests_total", route="/v1/licenses", status="401") == 2
    assert grew("licore_runtime_outcomes_total", call="check", outcome="malformed") == 1
    assert grew("licore_runtime_outcomes_total", call="check", outcome="denied") == 3
    assert answers.count(429) == 2
    assert grew("licore_runtime_outcomes_total", call="check", outcome="rate_limited") == 2
    assert grew("licore_rate_limit_refusals_total", route="/runtime/check") == 2
    assert grew("licore_http_request_duration_seconds_count", route="/runtime/check") == 6
