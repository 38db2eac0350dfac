"""The README's walk-through, run as written: its shell blocks, taken from README.md, run in
one bash against a real `licore serve` started the way the quick start starts it (the
default SQLite file in the working directory). Where the README asks a person to open a link
and approve, Chromium does it through the real pages."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.server import LICORE, free_port

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]


def walkthrough_blocks(readme: str) -> list[str]:
    section = readme.split("## A walk-through", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


def password_of(script: str, username: str) -> str:
    found = re.search(rf"printf '([^']*)\\n' \| licore account add {username} ", script)
    assert found, f"the README adds {username} with a password"
    return found.group(1)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """A fresh folder laid out like the checkout for what the README touches."""
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    yield tmp_path


def approve(browser: Any, url: str, username: str, password: str) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        page.goto(url)  # an anonymous visitor is sent to sign in first
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="Continue").click()
        page.get_by_role("button", name="Approve").click()
        assert page.get_by_role("heading", level=1).inner_text() == "Approved"
    finally:
        context.close()


def test_the_readme_walkthrough_runs_verbatim(browser: Any, workdir: Path) -> None:
    blocks = walkthrough_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 4
    script = "\n".join(blocks)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LICORE_")}
    env |= {"LICORE_URL": url, "LICORE_DEVICE_INTERVAL": "1"}
    server = subprocess.Popen([str(LICORE), "serve", "--port", str(port)], cwd=workdir,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        shell = subprocess.Popen(["bash", "-c", "set -e\n" + script + "\necho WALKTHROUGH-DONE"],
                                 cwd=workdir, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        assert shell.stdout is not None
        output: list[str] = []
        for line in shell.stdout:
            print(line, end="", flush=True)
            output.append(line)
            asked = re.match(r"(\w+), open (\S+) and approve", line)
            if asked:
                who = asked.group(1)
                approve(browser, asked.group(2), who, password_of(script, who))
        assert shell.wait(timeout=120) == 0, "".join(output)
    finally:
        server.terminate()
        server.wait(10)
    text = "".join(output)
    assert text.rstrip().endswith("WALKTHROUGH-DONE"), text
    # bob's first copy was protected (the default); the second, by alice's choice, is not
    assert "bob's copy is protected: no key in sight" in text, text
    kept = re.search(r"bob's copy: (\S+)", text)
    assert kept, text
    assert not (workdir / "MyLaserSword.rbxmx").exists()  # the copy went to a folder of its own
    copy = Path(kept.group(1)).read_text()
    assert "LICORE_LICENSE_KEY" not in copy and re.search(r"lk_[A-Za-z0-9]+", copy), copy
    # the last block's answer: a sealed unlock for bob's own copy
    assert re.search(r'\{"ok":true,"exp":\d+,"cipher":"[0-9a-f]+","tag":"[0-9a-f]+"\}', text), text
    assert '"ok":true' in text and '"license"' in text  # publish and grant answered
