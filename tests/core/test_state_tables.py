"""Each table of the specification's section 3, transcribed, held against the code's tables.

Every row below is the specification's text, column by column, followed by the cells of the
code's table that carry it: the next state each cell reaches and the words its answer must
say. docs/state-machines.md is rendered from the same data (spec rows, then every row of
the code's table) so a reader can tick the rows off; regenerate it with
`.venv/bin/python -m tests.core.test_state_tables`.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from licore import api_keys, device_flow, licenses, products, releases, transitions
from licore.transitions import Event

DOC = Path(__file__).resolve().parents[2] / "docs" / "state-machines.md"


@attrs.frozen
class Cell:
    """One cell of the code's table, what it reaches, and a phrase its answer must carry."""

    state: enum.Enum
    event: Event
    next: str
    says: tuple[str, ...] = ()


@attrs.frozen
class SpecRow:
    state: str
    trigger: str
    condition: str
    next: str
    also: str
    cells: tuple[Cell, ...]


@attrs.frozen
class Machine:
    title: str
    rows: tuple[SpecRow, ...]
    table: Mapping[tuple[Any, Any], Any]
    none: enum.Enum | None


V, VE = products.Visibility, products.VisibilityEvent
L, LE = licenses.LicenseState, licenses.LicenseEvent
D, DE = device_flow.DeviceState, device_flow.DeviceEvent
K, KE = api_keys.KeyState, api_keys.KeyEvent

MACHINES = (
    Machine("Product visibility", (
        SpecRow("(none)", "`POST /products` without `id`", "`title` present", "draft",
                "A slug is generated. A product created through the API is always a draft, "
                "even when `discoverable` is sent. It has no file yet.",
                (Cell(V.NONE, VE.CREATE, "draft", ("A slug is generated",)),)),
        SpecRow("draft", "`POST /products` with `id` and `discoverable: true`",
                "Product belongs to the key's studio", "listed",
                "The reference says a build should be uploaded first; the condition is "
                "enforced by the seller workflow.",
                (Cell(V.DRAFT, VE.LIST, "listed"),
                 Cell(V.NONE, VE.LIST, "(none)", ("not_found",)))),
        SpecRow("listed", "`POST /products` with `id` and `discoverable: false`",
                "Product belongs to the key's studio", "draft", "Implied by the boolean field.",
                (Cell(V.LISTED, VE.UNLIST, "draft"),
                 Cell(V.NONE, VE.UNLIST, "(none)", ("not_found",)))),
    ), products.VISIBILITY, V.NONE),
    Machine("License", (
        SpecRow("(none)", "`POST /licenses`",
                "Product exists in the studio and the user does not already hold it", "active",
                "A runtime key is minted. Community-chat product roles earned by the grant are "
                "handed out.",
                (Cell(L.NONE, LE.GRANT, "active", ("A runtime key is minted",
                                                   "roles earned by the product are handed out")),
                 Cell(L.INACTIVE, LE.GRANT, "active", ("A runtime key is minted",)))),
        SpecRow("(none)", "`POST /licenses`", "User already holds it", "unchanged",
                "Error `already_owned`.",
                (Cell(L.ACTIVE, LE.GRANT, "active", ("`already_owned`",)),
                 Cell(L.PAUSED, LE.GRANT, "paused", ("`already_owned`",)))),
        SpecRow("active", "`DELETE /licenses`", "Matching license", "inactive",
                "The runtime key is cleared. The record is kept on purpose, so that a "
                "re-verified purchase pass cannot silently restore revoked access.",
                (Cell(L.ACTIVE, LE.REVOKE, "inactive", ("The runtime key is cleared",)),
                 Cell(L.INACTIVE, LE.PURCHASE_PASS, "inactive"))),
    ), licenses.LICENSES, L.NONE),
    Machine("Device authorization", (
        SpecRow("(none)", "`POST /device/code`",
                "Valid `client_id` and at least one available scope", "pending",
                "Codes returned.",
                (Cell(D.NONE, DE.REQUEST_CODE, "pending", ("Codes returned",)),)),
        SpecRow("pending", "Poll `/device/token`", "Not yet approved", "pending",
                "HTTP 400, `authorization_pending`.",
                (Cell(D.PENDING, DE.POLL, "pending", ("HTTP 400, `authorization_pending`",)),)),
        SpecRow("pending", "Poll too fast", "Faster than `interval`", "pending",
                "HTTP 400, `slow_down`.",
                (Cell(D.PENDING, DE.POLL_TOO_FAST, "pending", ("HTTP 400, `slow_down`",)),)),
        SpecRow("pending", "User approves", "Approver holds at least one requested scope",
                "approved", "The scope list is filtered to what the approver may grant.",
                (Cell(D.PENDING, DE.APPROVE, "approved",
                      ("The scope list is filtered to what the approver may grant",)),)),
        SpecRow("pending", "User approves", "No requested scope survives the filter",
                "pending, approval refused", "HTTP 403 on the approve step.",
                (Cell(D.PENDING, DE.APPROVE_NOTHING_SURVIVES, "pending", ("HTTP 403",)),)),
        SpecRow("pending", "User denies", "", "denied", "Poll gives `access_denied`.",
                (Cell(D.PENDING, DE.DENY, "denied"),
                 Cell(D.DENIED, DE.POLL, "denied", ("`access_denied`",)))),
        SpecRow("pending", "600 seconds pass", "", "expired", "Poll gives `expired_token`.",
                (Cell(D.PENDING, DE.TIME_PASSES, "expired"),
                 Cell(D.EXPIRED, DE.POLL, "expired", ("`expired_token`",)))),
        SpecRow("pending", "5 wrong code entries", "", "burned", "The session is unusable.",
                (Cell(D.PENDING, DE.BURN, "burned"),
                 Cell(D.BURNED, DE.POLL, "burned", ("`expired_token`",)))),
        SpecRow("approved", "Poll `/device/token`", "First poll after approval", "claimed",
                "Key returned once. Later polls give `expired_token`.",
                (Cell(D.APPROVED, DE.POLL, "claimed", ("Key returned once",)),
                 Cell(D.CLAIMED, DE.POLL, "claimed", ("`expired_token`",)))),
    ), device_flow.DEVICE_FLOW, D.NONE),
    Machine("API key", (
        SpecRow("active", "Holder calls `POST /revoke`", "", "revoked", "",
                (Cell(K.ACTIVE, KE.HOLDER_REVOKES, "revoked",
                      ("`revoked_at` is recorded",)),)),
        SpecRow("active", "User revokes it in the connected-apps list (effective on the next "
                "request)", "", "revoked", "",
                (Cell(K.ACTIVE, KE.USER_REVOKES, "revoked", ("`revoked_at` is recorded",)),)),
        SpecRow("active", "Unused for 60 days", "", "revoked automatically", "",
                (Cell(K.ACTIVE, KE.IDLE_60_DAYS, "revoked", ("`revoked_at` is recorded",)),)),
        SpecRow("revoked", "(any request)", "", "revoked",
                "A revoked, expired or unknown key yields `invalid_token`.",
                (Cell(K.REVOKED, KE.USE, "revoked", ("HTTP 401, `invalid_token`",)),)),
    ), api_keys.API_KEYS, None),
)


def _rendered(machine: Machine) -> dict[tuple[str, str, str], transitions.Rendered]:
    rows = transitions.render(machine.table, machine.none)
    return {(r.state, r.trigger, r.condition): r for r in rows}


def _key(machine: Machine, cell: Cell) -> tuple[str, str, str]:
    state = "(none)" if cell.state is machine.none else str(cell.state.value)
    return state, cell.event.trigger, cell.event.condition


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: m.title)
def test_every_specification_row_is_a_row_of_the_code(machine: Machine) -> None:
    rendered = _rendered(machine)
    for spec in machine.rows:
        for cell in spec.cells:
            row = rendered[_key(machine, cell)]
            assert row.next == cell.next, (spec, row)
            for phrase in cell.says:
                assert phrase in row.also, (spec, row, phrase)


def document() -> str:
    """docs/state-machines.md: each specification row beside the code's cells, then the
    code's whole table."""
    out = [
        "# State machines\n",
        "\nThe specification's section 3 gives a table for each stateful thing. licore "
        "writes each as a table of its own (`src/licore/products.py`, `licenses.py`, "
        "`device_flow.py`, `api_keys.py`), every cell written out by hand. This page is "
        "rendered from those tables by `tests/core/test_state_tables.py`, which also checks "
        "that it is current and that every row of the specification is a row of the code.\n",
        "\nFor each machine: first the specification's rows, each with the cells of licore's "
        "table that carry it (state × trigger [condition] → next state); then licore's whole "
        "table, including the rows the specification leaves unsaid (\"not shown\" in its "
        "words). A refused event changes nothing, so its next state is the state it was "
        "refused in. \"(none)\" is the state before a record exists.\n",
        "\nWhere licore goes beyond the specification's rows: a product or license that is "
        "not the caller's is `not_found`; a device code that no longer exists polls as "
        "`expired_token`; approving or denying anything but a pending authorization is "
        "refused as `expired_token`, and five wrong entries leave a code that is no longer "
        "pending as it is; an approved code polled too fast still gets its key; a "
        "purchase pass re-verified on an inactive license leaves it inactive; pausing and "
        "resuming are licore's own events (the specification does not show them); revoking "
        "a key that is already revoked from the connected-apps list is harmless. "
        "The chat-role hand-out and removal are named effects that the outbox delivers "
        "([events.md](events.md)); a role is handed out only while the license is in "
        "force, so an expired license loses it too.\n",
    ]
    for machine in MACHINES:
        out.append(f"\n## {machine.title}\n\n### Specification rows\n\n")
        out.append("| State | Trigger | Condition | Next state | Also | licore cells |\n"
                   "|---|---|---|---|---|---|\n")
        for spec in machine.rows:
            cells = "; ".join(
                f"{_key(machine, c)[0]} × {c.event.trigger}"
                + (f" [{c.event.condition}]" if c.event.condition else "") + f" → {c.next}"
                for c in spec.cells)
            out.append(f"| {spec.state} | {spec.trigger} | {spec.condition} | {spec.next} "
                       f"| {spec.also} | {cells} |\n")
        out.append("\n### licore's table\n\n")
        out.append(transitions.markdown(machine.table, machine.none))
    out.append(
        "\n## License lifecycle (licore's own rows)\n\n"
        "Rows beside the specification's license table, which stays as it is above: "
        "transfer, renewal, expiry, trials, tiers and re-keying (`LIFECYCLE` in "
        "`src/licore/licenses.py`; what they mean for sellers is in docs/licenses.md). They "
        "are read over a license's standing: its stored state, except that an active license "
        "past its `expires_at` stands as expired. Expiry is a condition of time, not a stored "
        "state: a runtime call refuses an expired key at once, and the expiry sweep only "
        "tells of it. A transfer is two rows: the giver's record (\"From this holder\") "
        "and the taker's (\"To this person\"), both in one transaction.\n\n")
    out.append(transitions.markdown(licenses.LIFECYCLE, licenses.Standing.NONE))
    out.append(
        "\n## Releases (licore's own rows)\n\n"
        "A version's release channels and its withdrawal (`RELEASES` in "
        "`src/licore/releases.py`; what they mean for sellers and buyers is in docs/api.md, "
        "\"Release channels\"). Publishing to stable is the specification's publishing: the "
        "version goes live. A version's state is read from its record: draft until "
        "published, then the channel it was last published to, withdrawn once withdrawn.\n\n")
    out.append(transitions.markdown(releases.RELEASES))
    return "".join(out)


def test_the_documented_tables_are_the_code_tables() -> None:
    assert DOC.read_text(encoding="utf-8") == document(), (
        "docs/state-machines.md is stale: run .venv/bin/python -m tests.core.test_state_tables")


if __name__ == "__main__":
    DOC.write_text(document(), encoding="utf-8")
    sys.stdout.write(f"wrote {DOC}\n")
