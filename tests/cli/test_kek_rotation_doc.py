"""docs/operators.md's one-host rotation, run as written: the block under "Rotating the
key-encryption key" in bash, with stand-ins for `systemctl` and `systemd-run`
(tests/support/systemd_standin.py) that restart a real `licore serve` with the environment
file's settings and run this checkout's `licore`. Before it, the server holds a buyer's
license; after it, the environment file holds the new key alone, the rotation's own file is
gone, the restarted server answers the buyer's check and a sealed /runtime/unlock, and a
command with the old key alone is refused."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import cast

import attrs

from tests.cli.test_backup import DATA, passes, unlocks, v1
from tests.cli.test_kek_check import refusal
from tests.cli.test_kek_rotation import licore
from tests.http.e2e import People, core, license_key, owner_key
from tests.support.fakes import TEST_KEK
from tests.support.server import Server, free_port
from tests.support.systemd_standin import install

DOC = Path(__file__).resolve().parents[2] / "docs" / "operators.md"
MARK = "<!-- the block below is run as written by tests/cli/test_kek_rotation_doc.py -->"
STUDIO = "products:read products:write licenses:read licenses:write packages:write"


@attrs.frozen
class Host:
    """What the test helpers read of a server: its address and its database."""

    url: str
    database_url: str


async def _people(d: object) -> People:
    from licore.services.deps import Deps
    from licore.services.wiring import UseCases

    assert isinstance(d, Deps)
    operator = UseCases.of(d).operator
    owner = await operator.add_account("owner13", "113", None)
    studio = await operator.add_studio("Studio13", "owner13")
    client = await operator.add_client("Shop tool", "Sells things", STUDIO)
    return People(owner.id, "", "", studio.id, client.id)


def documented_block() -> str:
    text = DOC.read_text()
    assert MARK in text, "docs/operators.md lost the rotation block this test runs"
    found = re.search(r"```sh\n(.*?)```", text[text.index(MARK):], re.S)
    assert found is not None
    return found.group(1)


def test_the_documented_one_host_rotation_runs_as_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    env_file = tmp_path / "licore.env"
    env_file.write_text(f"LICORE_DATABASE_URL={url}\nLICORE_KEK={TEST_KEK.hex()}\n"
                        f"LICORE_DATA_DIR={tmp_path / 'data'}\n")
    port = free_port()
    stand_ins = install(tmp_path / "bin")
    environ = {**os.environ, "PATH": f"{stand_ins}:{os.environ['PATH']}",
               "STANDIN_DIR": str(tmp_path), "STANDIN_ENV": str(env_file),
               "STANDIN_PORT": str(port)}
    subprocess.run([str(stand_ins / "systemctl"), "start", "licore"], env=environ,
                   check=True, timeout=180)
    try:
        host = cast(Server, Host(f"http://127.0.0.1:{port}", url))
        people = core(url, _people)
        seller = owner_key(host, people, STUDIO)
        product = v1(host, seller, "/products", {"title": "Rotated"})["id"]
        v1(host, seller, "/packages/settings", {"product_id": product, "unlock_data": DATA})
        v1(host, seller, "/licenses", {"product_id": product, "user": "77"})
        buyer_key = license_key(host, product, "77")

        block = documented_block()
        assert "ENV=/etc/licore/licore.env\n" in block
        block = block.replace("ENV=/etc/licore/licore.env\n", f"ENV={env_file}\n")
        ran = subprocess.run(["bash", "-e", "-c", block], env=environ, capture_output=True,
                             text=True, timeout=600, check=False)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert "nothing is left" in ran.stdout

        settings = env_file.read_text()
        new = re.search(r"^LICORE_KEK=([0-9a-f]{64})$", settings, re.M)
        assert new is not None and new.group(1) != TEST_KEK.hex(), settings
        assert "LICORE_KEK_PREVIOUS" not in settings and not (tmp_path / "rotate.env").exists()
        assert passes(host, product, "77", buyer_key)
        unlocks(host, product, "77", buyer_key)  # made before, opens under the buyer's key
        line = refusal(licore(url, tmp_path, "account", "list", kek=TEST_KEK))
        assert "replaced by a rotation" in line, line
        assert licore(url, tmp_path, "account", "list",
                      kek=bytes.fromhex(new.group(1))).returncode == 0
    finally:
        subprocess.run([str(stand_ins / "systemctl"), "stop", "licore"], env=environ,
                       timeout=120, check=False)
