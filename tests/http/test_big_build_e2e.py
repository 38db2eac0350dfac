"""A big build's copy made by a real `licore serve` (two workers) over protection worker processes
(docs/operators.md, `LICORE_PROTECT_PROCESSES`): the workers start with each serving process,
before any build asks for them; the buyer downloads exactly the copy protecting in one process
makes, the workers run under the serving process, and a graceful stop ends them. Publishing it
answers the protector's notes (docs/api.md)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from adapters_formats.codec import RobloxModelCodec
from adapters_protection.luau_protector import LuauProtector
from licore.builds.tree import Instance, Model, Prop
from licore.protection import parse_protection_settings
from licore.services.deps import Deps
from tests.http.e2e import auth, core, license_key, obtain_key, setup_people
from tests.http.test_runtime_e2e import ALL
from tests.support.models import script
from tests.support.server import Server, running_server

CODEC = RobloxModelCodec()
CORPUS = sorted((Path(__file__).resolve().parents[1] / "protection/corpus").glob("*.luau"))
RULES = {"rules": [{"paths": ["*"], "preset": "light"}]}
KEYED = 'local KEY = "LICORE_LICENSE_KEY"\nprint(#KEY)\n'


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, workers="2",
                        LICORE_PROTECT_PROCESSES="2") as s:
        yield s


def _model() -> bytes:
    children, total, i = [script("Keyed", KEYED)], 0, 0
    while total < 100 << 10:
        path = CORPUS[i % len(CORPUS)]
        source = path.read_text()
        children.append(script(f"S{i}_{path.stem}", source))
        total += len(source)
        i += 1
    return CODEC.write(Model("binary", [Instance("Folder", "root",
                                                 {"Name": Prop("String", b"Product")},
                                                 children=children)]))


def _protection_workers(server: Server) -> set[int]:
    """Processes of the server's group started by multiprocessing's spawn by a serving
    worker (not by the master, which may spawn the serving workers themselves)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            group = os.getpgid(int(entry.name))
            parent = int((entry / "stat").read_text().split(") ", 1)[1].split()[1])
        except (OSError, ProcessLookupError, IndexError, ValueError):
            continue
        if (group == server.process.pid and parent != server.process.pid
                and b"spawn_main" in cmdline):
            found.add(int(entry.name))
    return found


def _warmed(server: Server, serving: int) -> set[int]:
    """The protection workers, once each serving worker has said its are ready (they start
    with it, before any build asks for them)."""
    deadline = time.monotonic() + 120
    while server.log().count("protection worker processes ready") < serving:
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.05)
    return _protection_workers(server)


def test_a_big_build_downloads_as_protecting_in_one_process_makes_it(server: Server) -> None:
    # Two for each serving worker, started with it: the first big build waits for none.
    warm = _warmed(server, 2)
    assert len(warm) == 4, server.log()
    people = setup_people(server.database_url, "8")  # the buyer is platform user 28
    key = obtain_key(server, people, ALL, people.owner_id, people.studio_id)
    v1 = f"{server.url}/v1"
    product = httpx.post(f"{v1}/products", headers=auth(key),
                         json={"title": "Big"}).json()["id"]
    r = httpx.post(f"{v1}/packages/settings", headers=auth(key),
                   json={"product_id": product, "protection": RULES})
    assert r.status_code == 200, r.text
    data = _model()
    r = httpx.post(f"{v1}/packages/versions", headers=auth(key), content=data,
                   params={"product_id": product, "version": "1.0"}, timeout=120)
    assert r.status_code == 200, r.text
    r = httpx.post(f"{v1}/packages/publish", headers=auth(key), timeout=120,
                   json={"product_id": product, "version_id": r.json()["version"]["id"]})
    assert r.status_code == 200, r.text
    # The corpus's getfenv script keeps its names: a note in the answer, not a refusal.
    notes = r.json()["notes"]
    assert notes and all(n["path"].endswith("_getfenv_user") and n["line"] > 0
                         and "local names are kept" in n["message"] for n in notes)
    r = httpx.post(f"{v1}/licenses", headers=auth(key),
                   json={"product_id": product, "user": "28"})
    assert r.status_code in (200, 201), r.text
    library = obtain_key(server, people, "library:read library:download", people.buyer_id,
                         None)
    r = httpx.get(f"{v1}/library/download", headers=auth(library),
                  params={"product_id": product}, timeout=120)
    assert r.status_code == 200, r.text
    downloaded = [(s.path, s.source) for s in CODEC.read_sources(r.content).scripts]
    # Publishing (which checks it) and the download ran on the warm workers: none new.
    workers = _protection_workers(server)
    assert workers == warm, server.log()

    plain = license_key(server, product, "28")

    async def secret(d: Deps) -> bytes:
        from licore.services.wiring import UseCases
        async with d.storage.unit_of_work() as uow:
            lic = await uow.licenses.for_user(product, "28")
        assert lic is not None
        return UseCases.of(d).copies.license_secret(lic)

    watermark = bytes.fromhex((server.data_dir / "watermark").read_text())
    original = [(s.path, s.source.decode().replace("LICORE_LICENSE_KEY", plain))
                for s in CODEC.read_sources(data).scripts]
    here = LuauProtector(watermark).protect_all(
        original, parse_protection_settings(RULES), core(server.database_url, secret))
    assert [p for p, _ in downloaded] == [p for p, _ in original]
    assert [s.decode() for _, s in downloaded] == here
    assert all(s.encode() != o.encode() for s, (_, o) in zip(here, original, strict=True))

    server.process.terminate()  # a graceful stop: the serving workers drain, then exit
    server.process.wait(60)
    # Each serving worker ended on its own, its protection workers stopped as it exited
    # (not killed by the supervisor at the end of the grace period).
    assert "still busy after the grace period" not in server.log()
    deadline = time.monotonic() + 20
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(workers)


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.add(pid)
    return alive
