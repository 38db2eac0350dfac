"""The outbox under faults, with `licore worker` processes alone (the server's own delivery
loops are off, `LICORE_OUTBOX_WORKERS=0`): a worker killed with SIGKILL mid-delivery loses
nothing (another sends the message again, with the same id), and two worker processes never
send one message twice in the normal case."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.http.test_events_e2e import World, make_world, outbox_env, wait_for
from tests.support.fakes import TEST_KEK
from tests.support.server import LICORE, running_server
from tests.support.standins import ChatStandIn, WebhookReceiver, running


@pytest.fixture(scope="module")
def world(module_database_url: str) -> Iterator[World]:
    chat = ChatStandIn()
    with running(chat), running_server(module_database_url,
                                       **outbox_env(chat, LICORE_OUTBOX_WORKERS="0")) as s:
        yield make_world(s, chat, "66")


def worker(world: World, tmp_path: Path, name: str,
           **more: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, **outbox_env(world.chat, **more), "LICORE_DATABASE_URL":
           world.server.database_url, "LICORE_KEK": TEST_KEK.hex(),
           "LICORE_DATA_DIR": str(tmp_path)}
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - the process owns it
    return subprocess.Popen([str(LICORE), "worker"], env=env, cwd=tmp_path, stdout=log,
                            stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_a_worker_killed_mid_delivery_loses_nothing_and_the_resend_keeps_the_id(
        world: World, tmp_path: Path) -> None:
    receiver = WebhookReceiver(hang_first=20.0)  # holds the first delivery unanswered
    with running(receiver):
        endpoint = world.hook(receiver, "license.granted")
        world.api("POST", "/licenses", json={"product_id": world.product_id, "user": "8001"})
        # A short lease: the killed worker's claim runs out soon, and the second's is what
        # this test waits for (the lease must outlast the 2 s webhook timeout).
        first = worker(world, tmp_path, "first", LICORE_OUTBOX_LEASE="3")
        try:
            wait_for("the first worker is mid-delivery", lambda: len(receiver.received) == 1)
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
        second = worker(world, tmp_path, "second", LICORE_OUTBOX_LEASE="3")
        try:
            wait_for("the message is delivered after all", lambda: [
                d["state"] for d in world.deliveries() if d["endpoint_id"] == endpoint]
                == ["delivered"])
        finally:
            stop(second)
        (message,) = [d for d in world.deliveries() if d["endpoint_id"] == endpoint]
        ids = [r.id for r in receiver.received]
        assert len(ids) >= 2 and set(ids) == {message["id"]}  # again, with the same id
        assert message["id"] in receiver.ids() and receiver.invalid == 0
    world.api("DELETE", "/webhooks", params={"id": endpoint})


def test_two_worker_processes_never_send_a_message_twice(world: World,
                                                        tmp_path: Path) -> None:
    receiver = WebhookReceiver()
    with running(receiver):
        endpoint = world.hook(receiver, "license.granted")
        workers = [worker(world, tmp_path, "a"), worker(world, tmp_path, "b")]
        try:
            for n in range(20):
                world.api("POST", "/licenses", json={"product_id": world.product_id,
                                                     "user": str(9100 + n)})
            wait_for("every message is delivered", lambda: len(receiver.ids()) >= 20)
            wait_for("the log agrees", lambda: all(
                d["state"] == "delivered" for d in world.deliveries()
                if d["endpoint_id"] == endpoint))
        finally:
            for process in workers:
                stop(process)
        ids = receiver.ids()
        assert len(ids) == 20 and len(set(ids)) == 20
        log = [d for d in world.deliveries() if d["endpoint_id"] == endpoint]
        assert {d["attempts"] for d in log} == {1} and {d["id"] for d in log} == set(ids)
