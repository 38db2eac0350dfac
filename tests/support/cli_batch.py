"""Run several operator commands in one process: `python -m tests.support.cli_batch`.

End-to-end set-up makes the same half-dozen accounts, studios and clients in every module;
each `licore` process spends about a second of CPU importing and composing before its verb
runs. One process running the verbs through the same `main()` keeps everything the operator
path does (settings, the KEK check, Argon2, the real storage) at a sixth of the cost.

Reads a JSON list of {"args": [...], "stdin": "..."} and prints a JSON list of what each
verb wrote to stdout; the first verb that fails ends the run with its message on stderr.
With `--each`, every verb runs whatever the ones before it did, and each gives
{"stdout", "stderr", "code"}: what a `licore` process of its own would have written and
exited with (a `SystemExit` message goes to stderr with code 1, as Python does).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from licore_cli.main import main as licore


def run(batch: list[dict[str, object]]) -> list[str]:
    outputs = []
    for step in batch:
        args = [str(a) for a in step["args"]]  # type: ignore[attr-defined]
        sys.stdin = io.StringIO(str(step.get("stdin", "")))
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                licore(args)
        except SystemExit as stop:
            if stop.code not in (None, 0):
                raise SystemExit(f"{' '.join(args)}: {stop.code}") from None
        outputs.append(printed.getvalue().strip())
    return outputs


def outcome(args: list[str]) -> dict[str, object]:
    printed, complained = io.StringIO(), io.StringIO()
    code: object = 0
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(complained):
        try:
            licore(args)
        except SystemExit as stop:
            code = stop.code or 0
            if isinstance(code, str):
                print(code, file=sys.stderr)
                code = 1
    return {"stdout": printed.getvalue(), "stderr": complained.getvalue(), "code": code}


def run_each(batch: list[dict[str, object]]) -> list[dict[str, object]]:
    outcomes = []
    for step in batch:
        sys.stdin = io.StringIO(str(step.get("stdin", "")))
        outcomes.append(outcome([str(a) for a in step["args"]]))  # type: ignore[attr-defined]
    return outcomes


if __name__ == "__main__":
    steps = json.load(sys.stdin)
    print(json.dumps(run_each(steps) if "--each" in sys.argv[1:] else run(steps)))
