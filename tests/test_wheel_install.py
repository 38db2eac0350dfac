"""licore installs from its wheel (and from its sdist) into a fresh virtual environment,
outside any checkout, and serves: templates, the stylesheet and the migrations travel in
the wheel, and the version `licore --version` prints is the one pyproject.toml declares.
The `deploy/` systemd unit passes `systemd-analyze verify`."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import venv
from pathlib import Path

import httpx
import pytest

from tests.support.fakes import TEST_KEK
from tests.support.server import free_port

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.slow
def test_the_wheel_installs_in_a_fresh_venv_and_serves(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, ROOT, cwd=tmp_path)
    wheel = next(wheels.glob("licore-*.whl"))
    assert wheel.name == f"licore-{VERSION}-py3-none-any.whl"

    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(home)
    # as docs/operators.md installs: the locked dependencies, each checked by its hash, then
    # the wheel alone
    run(home / "bin" / "python", "-m", "pip", "install", "-q", "--require-hashes", "-r",
        ROOT / "deploy" / "requirements.lock", cwd=tmp_path)
    run(home / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", wheel, cwd=tmp_path)
    run(home / "bin" / "python", "-m", "pip", "check", cwd=tmp_path)  # nothing missing
    licore = home / "bin" / "licore"
    # nothing of the checkout on the path: the code comes from the installed wheel
    env = {"PATH": f"{home / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path),
           "LICORE_KEK": TEST_KEK.hex()}
    site = run(home / "bin" / "python", "-c", "import licore_cli; print(licore_cli.__file__)",
               cwd=tmp_path, env=env).stdout
    assert str(home) in site and str(ROOT) not in site
    assert run(licore, "--version", cwd=tmp_path, env=env).stdout.strip() == f"licore {VERSION}"
    assert "--public-url" in run(licore, "serve", "--help", cwd=tmp_path, env=env).stdout

    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen([licore, "serve", "--port", str(port)], cwd=tmp_path, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
        home_page = httpx.get(f"{base}/")
        assert home_page.status_code == 200 and "/assets/web.css" in home_page.text
        css = httpx.get(f"{base}/assets/web.css")
        assert css.status_code == 200 and "text/css" in css.headers["content-type"]
        assert httpx.get(f"{base}/signin").status_code == 200
        # the guides travel in the wheel: rendered from its own copy of docs/, links between
        # them rewritten, their screenshots served
        guide = httpx.get(f"{base}/guides/protection")
        assert guide.status_code == 200 and 'id="tracing-a-leaked-copy"' in guide.text
        web_guide = httpx.get(f"{base}/guides/web").text
        assert 'href="/guides/protection"' in web_guide
        assert httpx.get(f"{base}/guides/screenshots/dashboard.png").headers[
            "content-type"] == "image/png"
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    # the sdist builds the same install (built here with hatchling, the build backend)
    python = home / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "hatchling", cwd=tmp_path)
    run(home / "bin" / "hatchling", "build", "-t", "sdist", "-d", tmp_path / "sdist",
        cwd=ROOT)
    sdist = next((tmp_path / "sdist").glob("licore-*.tar.gz"))
    assert sdist.name == f"licore-{VERSION}.tar.gz"
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", sdist,
        cwd=tmp_path)
    assert run(licore, "--version", cwd=tmp_path, env=env).stdout.strip() == f"licore {VERSION}"
    assets = run(python, "-c", "from adapters_http.web import render; "
                 "print(render.CSS.is_file(), (render.HERE / 'templates' / 'home.html')"
                 ".is_file())", cwd=tmp_path, env=env).stdout.split()
    assert assets == ["True", "True"]
    shipped = run(python, "-c", "from adapters_http.web import guides; "
                  "print(guides.SOURCE == guides.SHIPPED, all((guides.SOURCE / f'{g.name}.md')"
                  ".is_file() for g in guides.GUIDES))", cwd=tmp_path, env=env).stdout.split()
    assert shipped == ["True", "True"]  # every guide, from the install, not a checkout
    # the migrations ran from the wheel: the database is there with its tables
    tables = run(home / "bin" / "python", "-c",
                 "import sqlite3; print(sqlite3.connect('licore.db').execute("
                 "\"SELECT count(*) FROM schema_migrations\").fetchone()[0])",
                 cwd=tmp_path, env=env).stdout.strip()
    from adapters_storage.schema import MIGRATIONS

    assert int(tables) == len(MIGRATIONS)


def test_the_systemd_unit_verifies(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian's systemd package) is on this machine"
    unit = (ROOT / "deploy" / "licore.service").read_text()
    # verify checks that ExecStart exists: point it at a stand-in of the installed command
    stand_in = tmp_path / "licore"
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    here = tmp_path / "licore.service"
    here.write_text(unit.replace("/opt/licore/venv/bin/licore", str(stand_in)))
    done = subprocess.run([analyze, "verify", str(here)], capture_output=True, text=True,
                          timeout=60, check=False,
                          env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    said = [line for line in (done.stdout + done.stderr).splitlines()
            if "licore.service" in line]
    assert done.returncode == 0 and said == [], done.stdout + done.stderr
    assert "EnvironmentFile=/etc/licore/licore.env" in unit
    # restarted whatever the exit status, for good: a late database must not stop it forever
    assert "RestartPreventExitStatus" not in unit and "StartLimitIntervalSec=0" in unit
    names = {line.split("=", 1)[0] for line in
             (ROOT / "deploy" / "licore.env").read_text().splitlines()
             if line and not line.startswith("#")}
    from licore_cli import settings

    known = {f"LICORE_{f.env}" for f in settings.FIELDS} | {
        "LICORE_KEK", "LICORE_SESSION_KEY", "LICORE_WATERMARK"}
    assert names <= known, names - known  # the environment file names real settings only


def test_the_backup_timer_verifies_and_its_command_makes_a_backup(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian's systemd package) is on this machine"
    service = (ROOT / "deploy" / "licore-backup.service").read_text()
    (tmp_path / "licore-backup.service").write_text(
        service.replace("/opt/licore/venv/bin/licore", "/bin/true"))
    shutil.copy(ROOT / "deploy" / "licore-backup.timer", tmp_path)
    done = subprocess.run([analyze, "verify", str(tmp_path / "licore-backup.service"),
                           str(tmp_path / "licore-backup.timer")], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    assert done.returncode == 0 and "licore-backup" not in done.stdout + done.stderr, \
        done.stdout + done.stderr
    # the service's command as systemd runs it (its %% and $$ unescaped), on a SQLite file
    line = next(x for x in service.splitlines() if x.startswith("ExecStart="))
    command = line.removeprefix("ExecStart=").replace("%%", "%").replace("$$", "$")
    backups = tmp_path / "backups"
    backups.mkdir()
    command = command.replace("/opt/licore/venv/bin/licore", str(Path(sys.executable).parent
                                                                  / "licore"))
    command = command.replace("/var/lib/licore-backups", str(backups))
    argv = shlex.split(command)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env |= {"LICORE_DATABASE_URL": f"sqlite:///{tmp_path / 'licore.db'}",
            "LICORE_DATA_DIR": str(tmp_path / "data")}
    subprocess.run([str(Path(sys.executable).parent / "licore"),
                    "migrate"], cwd=tmp_path, env=env, check=True, capture_output=True,
                   timeout=120)
    made = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert made.returncode == 0, made.stderr
    assert [p.name.startswith("licore-") for p in backups.iterdir()] == [True]


def test_the_lock_file_pins_every_dependency_with_hashes() -> None:
    """deploy/requirements.lock (pip-compile --generate-hashes, from pyproject.toml): every
    dependency of the project pinned to one version, every pin with its hashes."""
    text = (ROOT / "deploy" / "requirements.lock").read_text()
    pins: dict[str, int] = {}
    name = ""
    for line in text.splitlines():
        if line and not line.startswith((" ", "#")):
            name, _, version = line.split(" ")[0].partition("==")
            assert version, f"{line!r} is not pinned to one version"
            name = name.lower().replace("_", "-")
            pins[name] = 0
        elif line.strip().startswith("--hash=sha256:"):
            pins[name] += 1
    assert all(pins.values()), [n for n, hashes in pins.items() if not hashes]
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in wanted:
        base = re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        assert base in pins, f"{base} (pyproject.toml) is not in deploy/requirements.lock"
