"""nox sessions for those who prefer nox; `python3 dev.py test` runs the same steps."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "tests"]


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("ruff", "check", "src", "tests", "bench", "dev.py", "noxfile.py")
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("mypy")


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    session.run("pytest", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    for script in ("runtime", "download", "protect", "sdk"):
        session.run("python", f"bench/{script}.py", *session.posargs)
