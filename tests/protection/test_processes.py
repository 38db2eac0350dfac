"""A big build's scripts protected in worker processes (adapters_protection.processes): the
same copies and the same problems as in one process, the first failure in order, a dead
worker survived, and workers that end with the process that owns them."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters_protection.luau_protector import LuauProtector
from adapters_protection.processes import ProcessProtector, parts
from licore.protection import (
    ProtectionFailed,
    ProtectionProblem,
    ProtectionSettings,
    parse_protection_settings,
)

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "tests/protection/corpus").glob("*.luau"))
SECRET = b"watermark secret of this server, 32b"
LICENSE = b"license secret of one buyer"


def _settings(preset: str) -> ProtectionSettings:
    return parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})


def _build(size: int) -> list[tuple[str, str]]:
    """The corpus repeated under distinct paths until `size` characters, as a product's
    model holds its scripts."""
    scripts, total, i = [], 0, 0
    while total < size:
        path = CORPUS[i % len(CORPUS)]
        source = path.read_text()
        scripts.append((f"Product/Copy{i // len(CORPUS)}/{path.stem}", source))
        total += len(source)
        i += 1
    return scripts


def _worker_pids(protector: ProcessProtector) -> list[int]:
    # The executor's own table of its workers: what the test checks is that they exist.
    pool = protector._pool
    assert pool is not None
    return list(pool._processes)


@pytest.fixture
def spread() -> Iterator[ProcessProtector]:
    protector = ProcessProtector(SECRET, 2)
    yield protector
    protector.close()


BIG = _build(96 << 10)


@pytest.mark.parametrize("preset", ["light", "strong"])
def test_a_big_build_is_protected_in_workers_exactly_as_in_one_process(
        spread: ProcessProtector, preset: str) -> None:
    settings = _settings(preset)
    made = spread.protect_all(BIG, settings, LICENSE)
    assert spread.started and len(_worker_pids(spread)) == 2
    here = LuauProtector(SECRET).protect_all(BIG, settings, LICENSE)
    assert made == here  # byte for byte, in order
    assert made != LuauProtector(SECRET).protect_all(BIG, settings, b"another buyer")


def test_a_small_build_stays_in_this_process(spread: ProcessProtector) -> None:
    settings = _settings("strong")
    small = _build(16 << 10)
    assert spread.protect_all(small, settings, LICENSE) == LuauProtector(
        SECRET).protect_all(small, settings, LICENSE)
    assert spread.check(small, settings) == LuauProtector(SECRET).check(small, settings)
    assert not spread.started


def test_a_single_big_script_is_protected_in_a_worker(spread: ProcessProtector) -> None:
    """No faster there, but off the serving process's interpreter lock."""
    settings = _settings("light")
    one = [("Product/Big", "\n".join(f"do local v = {i}\nprint(v + 1) end"
                                      for i in range(3000)))]
    assert len(one[0][1]) > 96 << 10
    assert spread.protect_all(one, settings, LICENSE) == LuauProtector(
        SECRET).protect_all(one, settings, LICENSE)
    assert spread.started


def test_the_first_script_that_fails_is_the_one_named(spread: ProcessProtector) -> None:
    """Two broken scripts in different parts: the first in the build's order is named, as
    protecting in one process would, and nothing else is returned."""
    build = list(BIG)
    build.insert(len(build) // 3, ("Product/Broken1", "local x = = 1"))
    build.insert(2 * len(build) // 3, ("Product/Broken2", "if then"))
    settings = _settings("strong")
    with pytest.raises(ProtectionFailed) as spread_failure:
        spread.protect_all(build, settings, LICENSE)
    assert spread.started
    with pytest.raises(ProtectionFailed) as here_failure:
        LuauProtector(SECRET).protect_all(build, settings, LICENSE)
    assert spread_failure.value.problems == here_failure.value.problems
    assert [p.path for p in spread_failure.value.problems] == ["Product/Broken1"]


def test_checking_a_big_build_finds_what_one_process_finds(spread: ProcessProtector) -> None:
    build = list(BIG)
    build.insert(5, ("Product/Broken", "local x = = 1"))
    build.append(("Product/Env", "local a = 1\nprint(getfenv(1), a)"))
    settings = _settings("strong")
    found = spread.check(build, settings)
    assert spread.started
    assert found == LuauProtector(SECRET).check(build, settings)
    assert {p.path for p in found} >= {"Product/Broken", "Product/Env"}


def test_a_worker_killed_between_builds_costs_no_copy(spread: ProcessProtector) -> None:
    """The build after the death is made in this process (the same copy), and the one after
    that starts new workers."""
    settings = _settings("light")
    spread.protect_all(BIG, settings, LICENSE)
    dead = _worker_pids(spread)[0]
    os.kill(dead, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the executor notices on its own thread
        try:
            os.kill(dead, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    here = LuauProtector(SECRET).protect_all(BIG, settings, LICENSE)
    assert spread.protect_all(BIG, settings, LICENSE) == here
    assert spread.protect_all(BIG, settings, LICENSE) == here
    assert spread.started and dead not in _worker_pids(spread)


_OWNER = """
import os, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/src"]
from adapters_protection.processes import ProcessProtector
from licore.protection import parse_protection_settings
from tests.protection.test_processes import BIG, SECRET, LICENSE
protector = ProcessProtector(SECRET, 2)
protector.protect_all(BIG, parse_protection_settings({"rules": [{"paths": ["*"],
                                                                   "preset": "minify"}]}),
                      LICENSE)
print(" ".join(str(pid) for pid in protector._pool._processes), flush=True)
sys.stdin.read()
"""


def test_workers_end_when_the_process_that_owns_them_is_killed() -> None:
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(ROOT)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        pids = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, 0)  # alive while their owner is
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _alive(pid)]
    assert alive == []


_BREAKS_MIDWAY = """
import os, signal, sys, threading, time
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/src"]
from adapters_protection.processes import ProcessProtector
from licore.protection import parse_protection_settings
from tests.protection.test_processes import BIG, SECRET, LICENSE
protector = ProcessProtector(SECRET, 2)
settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
minify = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})
protector.protect_all(BIG, minify, LICENSE)  # starts the pool
pids = list(protector._pool._processes)
print(" ".join(map(str, pids)), flush=True)
threading.Timer(0.3, os.kill, (pids[0], signal.SIGKILL)).start()
protector.protect_all(BIG + BIG, settings, LICENSE)  # parts still queued when it dies
protector.close()
"""


def test_an_owner_that_ignores_sigterm_still_stops_a_broken_pool() -> None:
    """`licore serve`'s workers ignore SIGTERM (the supervisor drains them), and spawned
    processes inherit that. A pool that breaks with parts still queued stops its other
    workers with SIGTERM and waits for them: they must not ignore it, or the owner hangs."""
    owner = subprocess.Popen(
        [sys.executable, "-c", _BREAKS_MIDWAY, str(ROOT)], stdout=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN))
    try:
        assert owner.stdout is not None
        pids = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(pids) == 2
        assert owner.wait(timeout=60) == 0
    finally:
        owner.kill()
        owner.wait()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A worker that ended but is not yet reaped by init still answers; read its state.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_refusal_crosses_processes_with_its_problems() -> None:
    problems = [ProtectionProblem("Product/A", 3, "syntax error"),
                ProtectionProblem("Product/B", 0, "note", blocking=False)]
    again = pickle.loads(pickle.dumps(ProtectionFailed(problems)))  # noqa: S301 (our own bytes)
    assert isinstance(again, ProtectionFailed)
    assert again.problems == tuple(problems)
    assert str(again) == str(ProtectionFailed(problems))


def test_parts_keep_the_order_and_every_script() -> None:
    scripts = [(f"p{i}", "x" * (i % 7 * 100 + 1)) for i in range(50)]
    cut = parts(scripts, 1000)
    assert [s for part in cut for s in part] == scripts
    assert all(sum(len(s) for _, s in part) <= 1000 or len(part) == 1 for part in cut)
    assert parts([], 10) == []


_FROM_STDIN = """
import sys
sys.path[:0] = [{root!r}, {root!r} + "/src"]
from adapters_protection.luau_protector import LuauProtector
from adapters_protection.processes import ProcessProtector
from licore.protection import parse_protection_settings
from tests.protection.test_processes import BIG, SECRET, LICENSE
settings = parse_protection_settings({{"rules": [{{"paths": ["*"], "preset": "light"}}]}})
protector = ProcessProtector(SECRET, 2)
here = LuauProtector(SECRET).protect_all(BIG, settings, LICENSE)
for _ in range(2):
    assert protector.protect_all(BIG, settings, LICENSE) == here
assert not protector.started
print("same copies", flush=True)
"""


def test_a_program_read_from_stdin_protects_in_its_own_process_and_says_so_once() -> None:
    """Spawned workers load the program's main module again; one read from stdin cannot
    be, so no worker is started (each would die as it started, and every big build would
    wait for that), and one warning says why."""
    ran = subprocess.run([sys.executable, "-"], input=_FROM_STDIN.format(root=str(ROOT)),
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "same copies"
    assert ran.stderr.count("protection worker processes cannot start") == 1, ran.stderr
    assert "<stdin>" in ran.stderr
    assert "Traceback" not in ran.stderr and "ended unexpectedly" not in ran.stderr


def test_a_worker_protects_with_the_cycle_collector_off_and_turns_it_back_on() -> None:
    """Workers switch the collector off only for the part they protect (docs/performance.md),
    and back on after it, a failing part included."""
    import gc

    from adapters_protection.processes import _no_cycle_collection

    assert gc.isenabled()
    with _no_cycle_collection():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), _no_cycle_collection():
        raise ValueError("a part that fails")
    assert gc.isenabled()
