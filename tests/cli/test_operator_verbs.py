"""The operator's day: list what exists with ids, set passwords, change an app, all from the
`licore` command, on SQLite and PostgreSQL; `--json` for scripts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx

from tests.support.fakes import TEST_KEK
from tests.support.server import LICORE, running_server


def licore(url: str, tmp: Path, *args: str, stdin: str = "",
           ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    # the key `running_server` gives the server: one database, one key-encryption key
    env |= {"LICORE_DATABASE_URL": url, "LICORE_DATA_DIR": str(tmp / "data"),
            "LICORE_KEK": TEST_KEK.hex()}
    done = subprocess.run([str(LICORE), *args], input=stdin, env=env, cwd=tmp, text=True,
                          capture_output=True, timeout=120, check=False)
    assert (done.returncode == 0) is ok, done.stderr
    return done


def test_lists_passwords_and_app_changes(database_url: str, tmp_path: Path) -> None:
    def run(*args: str, stdin: str = "", ok: bool = True) -> subprocess.CompletedProcess[str]:
        return licore(database_url, tmp_path, *args, stdin=stdin, ok=ok)

    alice = run("account", "add", "alice", "--platform-id", "1001",
                stdin="a long password\n").stdout.strip()
    bob = run("account", "add", "bob", "--platform-id", "2002", "--no-password").stdout.strip()
    studio = run("studio", "add", "Alice Games", "--owner", "alice").stdout.strip()
    run("studio", "collaborator", "Alice Games", "bob", "--manage-licenses")
    app = run("client", "add", "Installer", "--description", "Installs",
              "--scopes", "library:read").stdout.strip()

    accounts = json.loads(run("account", "list", "--json").stdout)
    assert accounts == [
        {"id": alice, "username": "alice", "platform_id": "1001", "can_sign_in": True,
         "disabled": False},
        {"id": bob, "username": "bob", "platform_id": "2002", "can_sign_in": False,
         "disabled": False}]
    assert f"{bob}  bob  platform 2002  (no password)" in run("account", "list").stdout

    studios = json.loads(run("--json", "studio", "list").stdout)
    assert [(s["id"], s["name"]) for s in studios] == [(studio, "Alice Games")]
    members = {m["username"]: (m["owner"], m["permissions"]) for m in studios[0]["members"]}
    assert members == {"alice": (True, ["manage_licenses", "manage_products"]),
                       "bob": (False, ["manage_licenses"])}

    # a password for bob, who could not sign in before; too short is refused and changes nothing
    short = run("account", "password", "bob", stdin="short\n", ok=False)
    assert "at least 10 characters" in short.stderr and "Traceback" not in short.stderr
    run("account", "password", "bob", stdin="bob's new password\n")
    assert json.loads(run("account", "list", "--json").stdout)[1]["can_sign_in"] is True

    # an app's scopes and description change; a second app may not take its name
    run("client", "update", app, "--scopes", "library:read library:download",
        "--description", "Installs licensed models")
    clients = json.loads(run("client", "list", "--json").stdout)
    assert clients == [{"id": app, "name": "Installer", "description": "Installs licensed models",
                        "scopes": ["library:read", "library:download"], "disabled": False}]
    twin = run("client", "add", "installer", "--description", "x", "--scopes", "library:read",
               ok=False)
    assert "an app named Installer exists" in twin.stderr
    other = run("client", "add", "Other", "--description", "x",
                "--scopes", "library:read").stdout.strip()
    taken = run("client", "update", other, "--name", "INSTALLER", ok=False)
    assert "exists" in taken.stderr
    assert len(json.loads(run("client", "list", "--json").stdout)) == 2


def test_a_password_set_by_the_operator_signs_in(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    licore(url, tmp_path, "account", "add", "cleo", "--platform-id", "77", "--no-password")
    licore(url, tmp_path, "account", "password", "cleo", stdin="cleo's password\n")
    with running_server(url) as server, httpx.Client(base_url=server.url) as client:
        form = client.get("/signin").text
        token = form.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        signed = client.post("/signin", data={"csrf": token, "username": "cleo",
                                              "password": "cleo's password"})
        assert signed.status_code == 303
