"""The operator's day: list what exists with ids, set passwords, change an app, all from the
`licore` command, on SQLite and PostgreSQL; `--json` for scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.fakes import TEST_KEK
from tests.support.server import LICORE, running_server

ROOT = Path(__file__).resolve().parents[2]


def _env(url: str, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    # the key `running_server` gives the server: one database, one key-encryption key
    return env | {"LICORE_DATABASE_URL": url, "LICORE_DATA_DIR": str(tmp / "data"),
                  "LICORE_KEK": TEST_KEK.hex()}


def licore(url: str, tmp: Path, *args: str, stdin: str = "",
           ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(LICORE), *args], input=stdin, env=_env(url, tmp), cwd=tmp,
                          text=True, capture_output=True, timeout=120, check=False)
    assert (done.returncode == 0) is ok, done.stderr
    return done


Step = tuple[list[str], str, bool]  # arguments, stdin, whether it succeeds


def licore_each(url: str, tmp: Path, *steps: Step) -> list[subprocess.CompletedProcess[str]]:
    """Several verbs in a row through the same `main()` as the `licore` command, in one
    process (tests/support/cli_batch.py): each `licore` process costs about a second of CPU
    before its verb starts, and this test ran nineteen of them on each database."""
    batch = [{"args": args, "stdin": stdin} for args, stdin, _ in steps]
    ran = subprocess.run([sys.executable, "-m", "tests.support.cli_batch", "--each"],
                         input=json.dumps(batch), env=_env(url, tmp) | {"PYTHONPATH": str(ROOT)},
                         cwd=tmp, text=True, capture_output=True, timeout=120, check=False)
    assert ran.returncode == 0, ran.stderr
    outcomes = [subprocess.CompletedProcess(args, o["code"], o["stdout"], o["stderr"])
                for (args, _, _), o in zip(steps, json.loads(ran.stdout), strict=True)]
    for (args, _, ok), done in zip(steps, outcomes, strict=True):
        assert (done.returncode == 0) is ok, (args, done.stderr)
    return outcomes


def test_lists_passwords_and_app_changes(database_url: str, tmp_path: Path) -> None:
    def each(*steps: Step) -> list[subprocess.CompletedProcess[str]]:
        return licore_each(database_url, tmp_path, *steps)

    made = each(
        (["account", "add", "alice", "--platform-id", "1001"], "a long password\n", True),
        (["account", "add", "bob", "--platform-id", "2002", "--no-password"], "", True),
        (["studio", "add", "Alice Games", "--owner", "alice"], "", True),
        (["studio", "collaborator", "Alice Games", "bob", "--manage-licenses"], "", True),
        (["client", "add", "Installer", "--description", "Installs",
          "--scopes", "library:read"], "", True),
        (["account", "list", "--json"], "", True),
        (["account", "list"], "", True),
        (["--json", "studio", "list"], "", True))
    alice, bob, studio, _, app = (done.stdout.strip() for done in made[:5])
    accounts_json, accounts_text, studios_json = (done.stdout for done in made[5:])

    accounts = json.loads(accounts_json)
    assert accounts == [
        {"id": alice, "username": "alice", "platform_id": "1001", "can_sign_in": True,
         "disabled": False},
        {"id": bob, "username": "bob", "platform_id": "2002", "can_sign_in": False,
         "disabled": False}]
    assert f"{bob}  bob  platform 2002  (no password)" in accounts_text

    studios = json.loads(studios_json)
    assert [(s["id"], s["name"]) for s in studios] == [(studio, "Alice Games")]
    members = {m["username"]: (m["owner"], m["permissions"]) for m in studios[0]["members"]}
    assert members == {"alice": (True, ["manage_licenses", "manage_products"]),
                       "bob": (False, ["manage_licenses"])}

    # a password for bob, who could not sign in before; too short is refused (by a `licore`
    # process of its own: the exit status and stderr the operator sees) and changes nothing
    short = licore(database_url, tmp_path, "account", "password", "bob", stdin="short\n",
                   ok=False)
    assert "at least 10 characters" in short.stderr and "Traceback" not in short.stderr
    # an app's scopes and description change; a second app may not take its name
    _, after, _, clients, twin, other = each(
        (["account", "password", "bob"], "bob's new password\n", True),
        (["account", "list", "--json"], "", True),
        (["client", "update", app, "--scopes", "library:read library:download",
          "--description", "Installs licensed models"], "", True),
        (["client", "list", "--json"], "", True),
        (["client", "add", "installer", "--description", "x", "--scopes", "library:read"],
         "", False),
        (["client", "add", "Other", "--description", "x", "--scopes", "library:read"], "",
         True))
    assert json.loads(after.stdout)[1]["can_sign_in"] is True
    assert json.loads(clients.stdout) == [
        {"id": app, "name": "Installer", "description": "Installs licensed models",
         "scopes": ["library:read", "library:download"], "disabled": False}]
    assert "an app named Installer exists" in twin.stderr
    taken, final = each(
        (["client", "update", other.stdout.strip(), "--name", "INSTALLER"], "", False),
        (["client", "list", "--json"], "", True))
    assert "exists" in taken.stderr
    assert len(json.loads(final.stdout)) == 2


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
