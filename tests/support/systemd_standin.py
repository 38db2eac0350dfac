"""Stand-ins for `systemctl` and `systemd-run`, so a test can run the operator's commands of
docs/operators.md as written on a machine without systemd: `systemctl start|restart licore`
(re)starts a real `licore serve` on the test's port with the settings of the environment file
(`STANDIN_ENV`) and waits until it answers /readyz; `systemd-run ... -p EnvironmentFile=F
... /opt/licore/venv/bin/licore ARGS` runs this checkout's `licore ARGS` with those files'
settings, in order, and nothing else of the test's environment."""

from __future__ import annotations

import sys
from pathlib import Path

_COMMON = '''
import os, signal, subprocess, sys, time
from pathlib import Path
HERE = Path(os.environ["STANDIN_DIR"])
LICORE = {licore!r}

def settings(*files):
    env = {{k: v for k, v in os.environ.items()
           if not k.startswith(("LICORE_", "STANDIN_"))}}
    for name in files:
        for line in Path(name).read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                key, _, value = line.partition("=")
                env[key.strip()] = value.strip()
    return env
'''

_SYSTEMCTL = _COMMON + '''
import urllib.request
verb, unit = sys.argv[1:3]
assert unit == "licore", unit
pidfile = HERE / "licore.pid"

def alive(pid):
    try:  # a zombie nobody reaped yet is gone too
        return Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
if pidfile.exists():
    pid = int(pidfile.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    except ProcessLookupError:
        pass
if verb == "stop":
    sys.exit(0)
port = os.environ["STANDIN_PORT"]
log = open(HERE / "licore.log", "ab")
process = subprocess.Popen([LICORE, "serve", "--port", port], env=settings(
    os.environ["STANDIN_ENV"]), cwd=HERE, stdout=log, stderr=subprocess.STDOUT,
    start_new_session=True)
pidfile.write_text(str(process.pid))
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    if process.poll() is not None:
        sys.exit(f"licore serve exited: {{(HERE / 'licore.log').read_text()[-2000:]}}")
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{{port}}/readyz", timeout=1).status == 200:
            sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit("licore serve did not become ready")
'''

_SYSTEMD_RUN = _COMMON + '''
args = sys.argv[1:]
files = []
while args and args[0].startswith("-"):
    flag = args.pop(0)
    if flag == "-p":
        prop = args.pop(0)
        if prop.startswith("EnvironmentFile="):
            files.append(prop.removeprefix("EnvironmentFile="))
assert args[0] == "/opt/licore/venv/bin/licore", args
sys.exit(subprocess.run([LICORE, *args[1:]], env=settings(*files), cwd=HERE).returncode)
'''


def install(folder: Path) -> Path:
    """A folder holding `systemctl` and `systemd-run` stand-ins, to put first on PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    licore = str(Path(sys.executable).parent / "licore")
    for name, body in (("systemctl", _SYSTEMCTL), ("systemd-run", _SYSTEMD_RUN)):
        path = folder / name
        path.write_text(f"#!{sys.executable}\n" + body.format(licore=licore))
        path.chmod(0o755)
    return folder
