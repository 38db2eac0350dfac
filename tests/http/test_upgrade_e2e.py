"""A rolling upgrade and its rollback (docs/operators.md, "Upgrading and rolling back"): a host
of the previous release and a host of this one serve one PostgreSQL database through Debian's
nginx (the site in `deploy/nginx-licore.conf`, both hosts in its upstream).

The previous release's code is taken from git (`git archive` of PREVIOUS_RELEASE's `src/`)
and put first on that host's PYTHONPATH, so its `licore serve` runs that release's code with
this checkout's dependencies. The previous host makes the database; this release's host
starts beside it and migrates it (expand only, so the previous one keeps serving); calls
through nginx reach both; a license granted on either host works on the other; then this
release's host stops (the rollback) and the previous one serves everything, what the newer
host made included."""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters_storage.schema import MIGRATIONS
from tests.cli.test_backup import DATA, passes, unlocks, v1
from tests.conftest import IN_CI
from tests.http import test_nginx_e2e as nginx
from tests.http.e2e import People, core, license_key, owner_key
from tests.support.server import LICORE, Server, free_port, running_server

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
ROOT = Path(__file__).resolve().parents[2]
# The release before this one, whose hosts an upgrade to this one runs beside (bump it when
# releasing: the release just made becomes the previous one).
PREVIOUS_RELEASE = "1454d015c172adce892c05006ea70f61e4b9f2ce"
STUDIO = ("packages:read packages:write products:read products:write licenses:read "
          "licenses:write")


def previous_release(folder: Path) -> Path:
    """The previous release's `src/`, unpacked from git into `folder`."""
    archived = subprocess.run(["git", "-C", str(ROOT), "archive", PREVIOUS_RELEASE, "src"],
                              capture_output=True, timeout=120, check=False)
    assert archived.returncode == 0, (
        f"the previous release {PREVIOUS_RELEASE[:12]} is not in this checkout's git history "
        f"(a shallow clone? fetch it whole): {archived.stderr.decode()[:300]}")
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def migrations_of(src: Path) -> int:
    """How many migrations a release's code knows (its schema module, read as a file)."""
    spec = importlib.util.spec_from_file_location(
        "previous_schema", src / "adapters_storage" / "schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return len(module.MIGRATIONS)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    problem = nginx._install_nginx()
    if problem:
        if IN_CI:
            pytest.fail(f"CI=true and Debian's nginx is not available: {problem}")
        pytest.skip(f"Debian's nginx is not available: {problem}")
    folder = tmp_path / "nginx"
    folder.mkdir()
    yield folder, nginx._certificates(folder)
    shutil.rmtree(folder, ignore_errors=True)


def start_nginx(folder: Path, ports: list[int]) -> tuple[subprocess.Popen[bytes], str]:
    https_port = free_port()
    text = nginx._site(folder, ports[0], free_port(), https_port)
    both = "\n".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=30s;" for p in ports)
    text = text.replace(f"    server 127.0.0.1:{ports[0]};", both)
    (folder / "site.conf").write_text(text)
    (folder / "nginx.conf").write_text(nginx._main_config(folder))
    process = subprocess.Popen([str(nginx.NGINX), "-p", str(folder), "-c",
                                str(folder / "nginx.conf"), "-g", "daemon off;"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert nginx._listening(process, https_port), (folder / "error.log").read_text()
    return process, f"https://127.0.0.1:{https_port}"


async def _people(d: object) -> People:
    from licore.services.deps import Deps
    from licore.services.wiring import UseCases

    assert isinstance(d, Deps)
    operator = UseCases.of(d).operator
    owner = await operator.add_account("owner12", "112", None)
    studio = await operator.add_studio("Studio12", "owner12")
    client = await operator.add_client("Shop tool", "Sells things", STUDIO)
    return People(owner.id, "", "", studio.id, client.id)


def migrate_check(url: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    done = subprocess.run([str(LICORE), "migrate", "--check"], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**env, "LICORE_DATABASE_URL": url})
    assert done.returncode == 0, done.stderr
    return done.stdout


def served_by(server: Server, path: str) -> int:
    return sum(1 for line in server.log().splitlines() if f'"path": "{path}"' in line)


def test_previous_and_this_release_serve_one_database_then_roll_back(
        tmp_path: Path, pg_schema_url: str, site: tuple[Path, Path]) -> None:
    old_src = previous_release(tmp_path / "previous")
    said = subprocess.run([str(LICORE), "--help"], capture_output=True, text=True, timeout=60,
                          check=True, env={**os.environ, "PYTHONPATH": str(old_src)}).stdout
    # that release's own words (this one's differ): its code is what runs there
    assert "contract section 2" in " ".join(said.split())
    proxied = {"LICORE_TRUSTED_PROXIES": "127.0.0.1/32"}
    with running_server(pg_schema_url, PYTHONPATH=str(old_src), **proxied) as old:
        people = core(pg_schema_url, _people)
        seller = owner_key(old, people, STUDIO)
        product = v1(old, seller, "/products", {"title": "Upgraded"})["id"]
        v1(old, seller, "/packages/settings", {"product_id": product, "unlock_data": DATA})
        v1(old, seller, "/licenses", {"product_id": product, "user": "77"})
        buyer_key = license_key(old, product, "77")
        plan = migrate_check(pg_schema_url, tmp_path)  # what this release's start will do
        for number in range(migrations_of(old_src) + 1, len(MIGRATIONS) + 1):
            assert f"would apply migration {number} (expand)" in plan, plan
        assert "(contract)" not in plan, plan

        with running_server(pg_schema_url, **proxied) as new:  # migrates, beside the old
            assert "nothing to apply" in migrate_check(pg_schema_url, tmp_path)
            process, url = start_nginx(site[0], [old.port, new.port])
            try:
                with nginx.Proxy(url, site[1]).client("127.0.0.2") as client:
                    for _ in range(6):  # round robin: both hosts answer, none fails
                        r = client.post("/runtime/check", json={
                            "user_id": "77", "product_id": product, "key": buyer_key})
                        assert r.status_code == 200 and r.json()["success"], r.text
                    assert served_by(old, "/runtime/check") and served_by(new, "/runtime/check")
                    # a license granted by this release, checked on the previous one
                    v1(new, seller, "/licenses", {"product_id": product, "user": "78"})
                    assert passes(old, product, "78", license_key(new, product, "78"))
                    unlocks(new, product, "77", buyer_key)
                    unlocks(old, product, "77", buyer_key)
                    assert client.get("/readyz").status_code == 200

                new.stop()  # the rollback: this release's host goes; nginx passes to the old
                with nginx.Proxy(url, site[1]).client("127.0.0.2") as client:
                    for user in ("77", "78"):
                        r = client.post("/runtime/check", json={
                            "user_id": user, "product_id": product,
                            "key": license_key(old, product, user)})
                        assert r.status_code == 200 and r.json()["success"], r.text
                    got = client.get("/v1/licenses", params={"product_id": product},
                                     headers={"Authorization": f"Bearer {seller}"})
                    assert got.status_code == 200, got.text
                    assert {x["platform_id"] for x in got.json()["licenses"]} >= {"77", "78"}
            finally:
                process.terminate()
                process.wait(30)
        assert "Traceback" not in old.log()
