"""Shared pieces of the end-to-end tests: a server, the operator CLI, and core approval."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import attrs
import httpx

from adapters_crypto import SystemClock
from adapters_storage import open_storage
from licore.services.deps import Deps
from tests.support.fakes import TEST_KEK, make_deps
from tests.support.server import LICORE, Server

ROOT = Path(__file__).resolve().parents[2]

T = TypeVar("T")


def _operator_env(database_url: str) -> dict[str, str]:
    # the server's own key: the database refuses a process holding another
    return {**os.environ, "LICORE_DATABASE_URL": database_url, "LICORE_KEK": TEST_KEK.hex()}


def cli(database_url: str, *args: str, stdin: str = "") -> str:
    done = subprocess.run([str(LICORE), *args], input=stdin, env=_operator_env(database_url),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def cli_batch(database_url: str, *steps: tuple[list[str], str]) -> list[str]:
    """Several operator verbs (arguments, stdin) through the real `licore` entry point in one
    process (tests/support/cli_batch.py): the same path as `cli`, one start-up instead of many."""
    batch = [{"args": args, "stdin": stdin} for args, stdin in steps]
    done = subprocess.run([sys.executable, "-m", "tests.support.cli_batch"],
                          input=json.dumps(batch), env=_operator_env(database_url),
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    outputs: list[str] = json.loads(done.stdout)
    return outputs


def core(database_url: str, action: Callable[[Deps], Awaitable[T]]) -> T:
    """Run a core use case against the server's own database, from the test process. In a
    thread of its own when this one already runs an event loop (Playwright's sync API does)."""

    async def run() -> T:
        deps = attrs.evolve(make_deps(open_storage(database_url)), clock=SystemClock())
        try:
            return await action(deps)
        finally:
            await deps.storage.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def end_a_minute_ago(database_url: str, product_id: str, user: str) -> None:
    """Time passing without waiting for it: the license's stored end set a minute back, as if
    the clock had reached it (the end a test gives must lie ahead when it is given)."""

    async def age(d: Deps) -> None:
        async with d.storage.unit_of_work() as uow:
            held = await uow.licenses.for_user(product_id, user)
            assert held is not None and held.expires_at is not None
            past = attrs.evolve(held, expires_at=int(time.time()) - 60)
            assert await uow.licenses.replace(past, expected=held.state)

    core(database_url, age)


@attrs.frozen
class People:
    owner_id: str
    buyer_id: str
    helper_id: str
    studio_id: str
    client_id: str


def setup_people(database_url: str, tag: str) -> People:
    owner, buyer, helper, studio, _, client = cli_batch(
        database_url,
        (["account", "add", f"owner{tag}", "--platform-id", f"1{tag}"], "owner-password\n"),
        (["account", "add", f"buyer{tag}", "--platform-id", f"2{tag}"], "buyer-password\n"),
        (["account", "add", f"helper{tag}", "--platform-id", f"3{tag}", "--no-password"], ""),
        (["studio", "add", f"Studio{tag}", "--owner", f"owner{tag}"], ""),
        (["studio", "collaborator", f"Studio{tag}", f"helper{tag}", "--manage-licenses"], ""),
        (["client", "add", f"Installer {tag}", "--description",
          "Installs products into your game", "--scopes",
          "products:read products:write licenses:read licenses:write "
          "packages:read packages:write library:read library:download"], ""))
    return People(owner, buyer, helper, studio, client)


def start_flow(server: Server, client_id: str, scope: str) -> dict[str, Any]:
    r = httpx.post(f"{server.url}/auth/device/code", json={"client_id": client_id,
                                                           "scope": scope})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def poll(server: Server, device_code: str) -> httpx.Response:
    return httpx.post(f"{server.url}/auth/device/token", json={"device_code": device_code})


def decide(database_url: str, account_id: str, user_code: str, approve: bool,
           studio_id: str | None = None) -> tuple[str, ...]:
    """The approval step as the consent page runs it, from the test process."""
    from licore.services.wiring import UseCases

    return core(database_url, lambda d: UseCases.of(d).device.decide(
        account_id, user_code, approve, studio_id))


def obtain_key(server: Server, people: People, scope: str, approver_id: str,
               studio_id: str | None) -> str:
    flow = start_flow(server, people.client_id, scope)
    decide(server.database_url, approver_id, flow["user_code"], True, studio_id)
    r = poll(server, flow["device_code"])
    assert r.status_code == 200, r.text
    token: str = r.json()["access_token"]
    return token


def owner_key(server: Server, people: People, scope: str) -> str:
    """An API key for the studio, approved by its owner, with `scope`."""
    return obtain_key(server, people, scope, people.owner_id, people.studio_id)


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def altered(key: str) -> str:
    """`key` with its last character changed (to one it surely was not)."""
    return key[:-1] + ("x" if key[-1] != "x" else "y")


def add_client(database_url: str, name: str, description: str, scopes: str) -> str:
    """An app, as `licore client add` makes it (the same use case), from the test process:
    a `licore` process costs about a second of CPU to start, for one row."""
    from licore.services.wiring import UseCases

    async def add(d: Deps) -> str:
        return (await UseCases.of(d).operator.add_client(name, description, scopes)).id

    return core(database_url, add)


def set_client_disabled(database_url: str, client_id: str, disabled: bool) -> int:
    """`licore client disable`/`enable`'s use case, from the test process: the keys revoked."""
    from licore.services.wiring import UseCases

    return core(database_url, lambda d: UseCases.of(d).operator.set_client_disabled(
        client_id, disabled))


def license_key(server: Server, product_id: str, platform_id: str) -> str:
    """The plain license key of a buyer's license, as the server keeps it (encrypted)."""

    async def read(d: Deps) -> str:
        async with d.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(product_id, platform_id)
        assert lic is not None and lic.key_ciphertext is not None
        return d.vault.decrypt(lic.key_ciphertext, lic.id)

    return core(server.database_url, read)


def whose_copy(server: Server, product_id: str, platform_id: str, data: bytes) -> bool:
    """Whether `data` is the buyer's own copy: protected copies hide the key, so the
    server's tracing (the watermark, and the key inside encrypted strings) names it."""
    from licore.services.wiring import UseCases

    async def trace(d: Deps) -> bool:
        async with d.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(product_id, platform_id)
        assert lic is not None
        found = await UseCases.of(d).copies.trace(None, product_id, "copy.rbxm", data)
        return found.license_id == lic.id and found.key_found

    return core(server.database_url, trace)
