"""`licore --help` points at the operator's guide, and every option of `serve` says what it
does."""

from __future__ import annotations

import argparse

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
