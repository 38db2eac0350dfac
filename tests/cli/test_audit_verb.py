"""`licore audit` (docs/audit.md): the operator reads the trail, their own changes to people
and apps included (which no studio sees), named as the operator; one studio's by name; JSON
for scripts; a bad filter is one line."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from tests.cli.test_operator_verbs import licore


def test_the_operator_reads_the_trail(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'licore.db'}"

    def run(*args: str, stdin: str = "", ok: bool = True) -> str:
        return licore(url, tmp_path, *args, stdin=stdin, ok=ok).stdout.strip()

    run("account", "add", "olga", "--platform-id", "5001", stdin="a long password\n")
    studio = run("studio", "add", "Olga Arts", "--owner", "olga")
    app = run("client", "add", "Kit Installer", "--description", "Installs",
              "--scopes", "library:read")
    everything = json.loads(run("audit", "--json"))
    actions = [e["action"] for e in everything]
    # Newest first; a studio and its owner's seat are made in one transaction, within one
    # millisecond (ids sort by the millisecond), so the trail does not order those two.
    assert actions[0] == "app.registered" and actions[3] == "account.created"
    assert set(actions[1:3]) == {"collaborator.added", "studio.created"}
    assert {e["actor"]["kind"] for e in everything} == {"operator"}
    assert everything[0]["actor"]["id"] == getpass.getuser()
    assert everything[0]["subject"] == {"type": "app", "id": app}
    assert everything[0]["studio_id"] is None and everything[2]["studio_id"] == studio
    assert "a long password" not in json.dumps(everything)

    mine = json.loads(run("audit", "--json", "--studio", "Olga Arts", "--action",
                          "collaborator"))
    assert [e["action"] for e in mine] == ["collaborator.added"]
    lines = run("audit", "--actor", "operator", "--limit", "1").splitlines()
    assert len(lines) == 1 and "app.registered  by operator" in lines[0]
    refused = licore(url, tmp_path, "audit", "--limit", "0", ok=False).stderr
    assert refused.strip().startswith("licore:") and "limit" in refused
