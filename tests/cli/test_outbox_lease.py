"""The outbox's lease must outlast a webhook send (docs/events.md): a send still running when
its lease ran out could be taken by another worker and sent twice at once. The settings
refuse such a pair, naming both; the sender gives up at its timeout, whatever the receiver
does, so the lease really does outlast it."""

from __future__ import annotations

import asyncio
import socket

import pytest

from adapters_events import SignedSender
from licore_cli import settings

EMPTY = {"LICORE_CONFIG": ""}


def test_the_defaults_leave_the_lease_longer_than_the_timeout() -> None:
    loaded = settings.load(EMPTY)
    assert loaded.core.outbox.lease > loaded.events.webhook_timeout


@pytest.mark.parametrize(("lease", "timeout"), [("15", "15"), ("10", "30")])
def test_a_lease_not_longer_than_the_timeout_is_refused_naming_both(lease: str,
                                                                   timeout: str) -> None:
    with pytest.raises(settings.SettingsError) as refused:
        settings.load({**EMPTY, "LICORE_OUTBOX_LEASE": lease,
                       "LICORE_WEBHOOK_TIMEOUT": timeout})
    message = str(refused.value)
    assert "LICORE_OUTBOX_LEASE" in message and "LICORE_WEBHOOK_TIMEOUT" in message
    assert "\n" not in message


def test_a_longer_lease_is_accepted() -> None:
    loaded = settings.load({**EMPTY, "LICORE_OUTBOX_LEASE": "16",
                            "LICORE_WEBHOOK_TIMEOUT": "15"})
    assert (loaded.core.outbox.lease, loaded.events.webhook_timeout) == (16, 15)


async def test_a_send_to_a_receiver_that_never_answers_ends_at_the_timeout() -> None:
    """A receiver that accepts the connection and never answers: the send returns a failure
    naming the timeout instead of holding the message past its lease."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    port = silent.getsockname()[1]
    try:
        sender = SignedSender(allow_private=True, timeout=1)
        result = await asyncio.wait_for(sender.send(
            f"http://127.0.0.1:{port}/hook", "msg_1", 1_800_000_000, "{}",
            ["whsec_" + "A" * 32]), 30)
    finally:
        silent.close()
    assert not result.done
    assert result.error == "no answer within 1 seconds"


def test_the_delivery_slots_are_settings_checked_like_the_others() -> None:
    """docs/operators.md: LICORE_OUTBOX_SLOTS per loop, LICORE_OUTBOX_STUDIO_SLOTS per
    studio; out of range is one line naming the setting."""
    defaults = settings.load(EMPTY)
    assert (defaults.events.slots, defaults.core.outbox.studio_slots) == (16, 4)
    loaded = settings.load({**EMPTY, "LICORE_OUTBOX_SLOTS": "32",
                            "LICORE_OUTBOX_STUDIO_SLOTS": "2"})
    assert (loaded.events.slots, loaded.core.outbox.studio_slots) == (32, 2)
    for name, value in (("LICORE_OUTBOX_SLOTS", "0"), ("LICORE_OUTBOX_STUDIO_SLOTS", "65")):
        with pytest.raises(settings.SettingsError, match=name):
            settings.load({**EMPTY, name: value})
