"""deploy/Containerfile builds and serves: the image is built from this checkout by the
container builder on this machine (docker or podman), started with a key-encryption key in
its environment, and answers /readyz and the sign-in page.

Where no builder answers (the docker command without a daemon, as on some CI machines and
development containers), this test skips and says so: the image cannot be built there, which
is a fact of the machine, not of licore."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.fakes import TEST_KEK
from tests.support.server import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def builder() -> tuple[str | None, str]:
    """A container command whose daemon (or, for podman, whose runtime) answers, or None and
    what each one said."""
    said = []
    for name in ("docker", "podman"):
        found = shutil.which(name)
        if found is None:
            said.append(f"{name}: not installed")
            continue
        info = subprocess.run([found, "info"], capture_output=True, text=True, timeout=60,
                              check=False)
        if info.returncode == 0:
            return found, ""
        last = (info.stderr or info.stdout).strip().splitlines()[-1:] or ["no answer"]
        said.append(f"{name}: {last[0]}")
    return None, "; ".join(said)


def test_the_container_image_builds_and_serves(tmp_path: Path) -> None:
    command, why = builder()
    if command is None:
        pytest.skip(f"no container builder runs on this machine ({why}); deploy/Containerfile "
                    f"was not built")
    tag = f"licore-test-{uuid.uuid4().hex[:8]}"
    name = f"{tag}-run"
    built = subprocess.run([command, "build", "-f", str(ROOT / "deploy" / "Containerfile"),
                            "-t", tag, str(ROOT)], capture_output=True, text=True,
                           timeout=1800, check=False)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    port = free_port()
    try:
        started = subprocess.run([command, "run", "-d", "--name", name, "-p",
                                  f"127.0.0.1:{port}:8000", "-e",
                                  f"LICORE_KEK={TEST_KEK.hex()}", tag],
                                 capture_output=True, text=True, timeout=120, check=False)
        assert started.returncode == 0, started.stderr
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, subprocess.run(
                [command, "logs", name], capture_output=True, text=True, check=False).stderr
            time.sleep(0.2)
        assert httpx.get(f"{base}/signin").status_code == 200
        user = subprocess.run([command, "exec", name, "id", "-un"], capture_output=True,
                              text=True, timeout=60, check=False).stdout.strip()
        assert user == "licore"  # not root
    finally:
        subprocess.run([command, "rm", "-f", name], capture_output=True, timeout=120,
                       check=False)
        subprocess.run([command, "rmi", "-f", tag], capture_output=True, timeout=120,
                       check=False)
