"""An operator's first hour: no password-less account by accident, and the verbs to stop an
account or take a collaborator out of a studio, each a clean line on a mistake. In-process
calls of `licore` (the same `main` the console script runs) to stay quick."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from adapters_storage import open_storage
from licore.errors import InvalidToken
from licore.services import signin
from licore.services.wiring import UseCases
from licore_cli.main import main
from tests.http.e2e import cli, poll, start_flow
from tests.support.fakes import TEST_KEK, make_deps
from tests.support.server import LICORE, running_server

Licore = Callable[..., str]


@pytest.fixture
def licore(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Licore:
    """`licore ARGS` in this process: its output, or SystemExit with its one line."""
    monkeypatch.chdir(tmp_path)
    for name, value in (("LICORE_DATABASE_URL", database_url), ("LICORE_KEK", TEST_KEK.hex()),
                        ("LICORE_DATA_DIR", str(tmp_path / "data"))):
        monkeypatch.setenv(name, value)

    def run(*args: str, stdin: str = "") -> str:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        main(list(args))
        return capsys.readouterr().out.strip()

    return run


def refused(run: Licore, *args: str, stdin: str = "") -> str:
    with pytest.raises(SystemExit) as stopped:
        run(*args, stdin=stdin)
    line = str(stopped.value.code)
    assert line.startswith("licore: ") and "\n" not in line and "Traceback" not in line
    return line


def test_an_empty_password_is_refused_and_makes_no_account(licore: Licore) -> None:
    for stdin in ("", "\n"):  # </dev/null, and an empty line
        line = refused(licore, "account", "add", "ana", "--platform-id", "11", stdin=stdin)
        assert "no password given" in line and "--no-password" in line
    assert json.loads(licore("account", "list", "--json")) == []
    licore("account", "add", "ana", "--platform-id", "11", stdin="ana's password\n")
    # resetting to nothing is refused too: removing a password is asked for by name
    line = refused(licore, "account", "password", "ana", stdin="\n")
    assert "no password given" in line
    assert json.loads(licore("account", "list", "--json"))[0]["can_sign_in"] is True


def test_the_verbs_refuse_mistakes_in_one_line(licore: Licore) -> None:
    licore("account", "add", "olga", "--platform-id", "21", "--no-password")
    licore("account", "add", "pim", "--platform-id", "22", "--no-password")
    licore("studio", "add", "Olga Games", "--owner", "olga")
    assert "no account named nobody" in refused(licore, "account", "disable", "nobody")
    assert "no account named nobody" in refused(licore, "account", "enable", "nobody")
    assert "no studio named Nope" in refused(licore, "studio", "remove-collaborator", "Nope",
                                             "pim")
    assert "pim is not a collaborator of Olga Games" in refused(
        licore, "studio", "remove-collaborator", "Olga Games", "pim")
    assert "owns Olga Games" in refused(licore, "studio", "remove-collaborator",
                                        "Olga Games", "olga")
    studios = json.loads(licore("studio", "list", "--json"))
    assert [m["username"] for m in studios[0]["members"]] == ["olga"]
    assert "no such client" in refused(licore, "client", "disable", "app_nope")


def test_removing_a_collaborator_revokes_their_studio_keys(licore: Licore,
                                                           database_url: str) -> None:
    licore("account", "add", "olga", "--platform-id", "21", "--no-password")
    licore("account", "add", "pim", "--platform-id", "22", "--no-password")
    licore("studio", "add", "Olga Games", "--owner", "olga")
    licore("studio", "collaborator", "Olga Games", "pim", "--manage-licenses")
    app = licore("client", "add", "Tool", "--description", "A tool", "--scopes",
                 "licenses:read library:read")
    assert [c["id"] for c in json.loads(licore("client", "list", "--json"))] == [app]
    studio_key, library_key = asyncio.run(_keys(database_url, app, "pim", "Olga Games"))

    assert licore("studio", "remove-collaborator", "Olga Games", "pim") == (
        "ok: 1 studio key(s) revoked")
    studios = json.loads(licore("studio", "list", "--json"))
    assert [m["username"] for m in studios[0]["members"]] == ["olga"]
    assert asyncio.run(_works(database_url, studio_key)) is False
    assert asyncio.run(_works(database_url, library_key)) is True  # their own, untouched


def test_a_disabled_account_cannot_sign_in_and_its_keys_end(licore: Licore,
                                                            database_url: str) -> None:
    licore("account", "add", "vic", "--platform-id", "31", stdin="vic's password\n")
    app = licore("client", "add", "Tool", "--description", "A tool", "--scopes",
                 "library:read")
    _, key = asyncio.run(_keys(database_url, app, "vic", None))

    assert licore("account", "disable", "vic") == "ok: 1 key(s) revoked"
    assert json.loads(licore("account", "list", "--json"))[0] | {"id": ""} == {
        "id": "", "username": "vic", "platform_id": "31", "can_sign_in": False,
        "disabled": True}
    assert "(disabled)" in licore("account", "list")
    assert asyncio.run(_works(database_url, key)) is False
    with pytest.raises(signin.AccountDisabled):
        asyncio.run(_sign_in(database_url, "vic", "vic's password"))

    licore("account", "enable", "vic")
    assert asyncio.run(_sign_in(database_url, "vic", "vic's password")) == "vic"
    assert asyncio.run(_works(database_url, key)) is False  # enabling brings no key back


async def _keys(url: str, app: str, username: str, studio: str | None) -> tuple[str, str]:
    """A studio key (when `studio` is named) and a library key approved by `username`."""
    from tests.support.scenario import obtain_key

    deps = make_deps(open_storage(url))
    try:
        use = UseCases.of(deps)
        client = next(c for c in await use.operator.clients() if c.id == app)
        account = next(a for a in await use.operator.accounts() if a.username == username)
        studio_key = ""
        if studio is not None:
            found = next(s for s, _ in await use.operator.studios() if s.name == studio)
            studio_key = await obtain_key(deps, client, "licenses:read", account, found.id)
        return studio_key, await obtain_key(deps, client, "library:read", account, None)
    finally:
        await deps.storage.close()


async def _works(url: str, key: str) -> bool:
    deps = make_deps(open_storage(url))
    try:
        await UseCases.of(deps).keys.identify(key)
    except InvalidToken:
        return False
    finally:
        await deps.storage.close()
    return True


async def _sign_in(url: str, username: str, password: str) -> str:
    deps = make_deps(open_storage(url))
    try:
        sessions = UseCases.of(deps).sessions
        done = await sessions.sign_in(sessions.local,
                                      {"username": username, "password": password}, "::1")
        return done.account.username
    finally:
        await deps.storage.close()


def _csrf(page: str) -> str:
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def test_a_disabled_accounts_session_ends_and_it_approves_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    with running_server(url) as server, httpx.Client(base_url=server.url) as web:
        cli(url, "account", "add", "wen", "--platform-id", "41", stdin="wen's password\n")
        app = cli(url, "client", "add", "Tool", "--description", "A tool", "--scopes",
                  "library:read")
        signed = web.post("/signin", data={"csrf": _csrf(web.get("/signin").text),
                                           "username": "wen", "password": "wen's password"})
        assert signed.status_code == 303
        flow = start_flow(server, app, "library:read")
        consent = web.get("/device", params={"code": flow["user_code"]})
        assert consent.status_code == 200 and "wen" in consent.text

        cli(url, "account", "disable", "wen")
        assert web.get("/device", params={"code": flow["user_code"]}).headers[
            "location"].startswith("/signin")  # the session is over
        decided = web.post("/device/decide", data={
            "csrf": _csrf(consent.text), "code": flow["user_code"], "decision": "approve"})
        assert decided.status_code in (303, 403)
        assert poll(server, flow["device_code"]).json()["error"] == "authorization_pending"
        again = web.post("/signin", data={"csrf": _csrf(web.get("/signin").text),
                                          "username": "wen", "password": "wen's password"})
        assert again.status_code == 403 and "disabled" in again.text


def test_serve_on_an_empty_install_first_says_how_to_make_an_account(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    command = "licore account add NAME --platform-id YOUR_ROBLOX_USER_ID"
    with running_server(url) as server:
        first = json.loads(server.log().splitlines()[0])
        home = httpx.get(f"{server.url}/")  # the home page says the same
        assert home.status_code == 200 and f"<code>{command}</code>" in home.text, home.text
        assert "No account yet" in home.text
        # once an account exists the page stops saying it (the same process)
        cli(url, "account", "add", "yan", "--platform-id", "52", "--no-password")
        assert command not in httpx.get(f"{server.url}/").text
    assert f"`{command}`" in first["message"], first
    assert f"{server.url}/signin" in first["message"]
    cli(url, "account", "add", "zed", "--platform-id", "51", "--no-password")
    with running_server(url) as server:
        assert "account add" not in server.log()
        assert command not in httpx.get(f"{server.url}/").text


def test_the_console_script_refuses_dev_null_as_a_password(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"
    with open("/dev/null") as nothing:
        done = subprocess.run([str(LICORE), "account", "add", "ana", "--platform-id", "11"],
                              stdin=nothing, capture_output=True, text=True, timeout=60,
                              env={"LICORE_DATABASE_URL": url, "LICORE_KEK": TEST_KEK.hex(),
                                   "PATH": "/usr/bin:/bin"}, cwd=tmp_path, check=False)
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert "no password given" in done.stderr
