"""`licore --help` points at the operator's guide, and every option of `serve` says what it
does."""

from __future__ import annotations

import argparse
import subprocess
import sys

from licore_cli.main import parser


def test_help_names_the_guide_and_serve_explains_its_options() -> None:
    whole = parser()
    assert "contract section" not in whole.format_help()
    assert "docs/operators.md" in whole.format_help()
    sub = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    options = {o.dest: o.help for o in serve._actions}
    for dest in ("host", "port", "workers", "public_url", "only"):
        assert options[dest], f"serve --{dest} has no help text"


def test_the_command_starts_without_the_server_or_the_use_cases() -> None:
    """`licore --help` (and every verb up to its own work) imports neither the HTTP side, the
    use cases, the crypto libraries nor the server: each is imported by the verb that needs
    it, so a command starts in a fraction of the time."""
    heavy = ("adapters_http", "adapters_crypto", "licore.services.wiring", "starlette",
             "hypercorn", "cryptography", "argon2", "psycopg", "jinja2")
    probe = ("import sys\nfrom licore_cli.main import parser\nparser().format_help()\n"
             f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout
