"""The outbox's payloads as column text, and back: the storage edge's converter for them.

A webhook body is stored as the exact bytes it is signed and sent with; a chat-role change
and a fan-out page as JSON objects (the shapes rows written before these were values also
have, so old rows read back unchanged). The message's kind says which a row holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
import cattrs

from adapters_storage.records import columns, from_row, to_row
from licore.events import FanOut, Message, MessageKind, Payload, RoleChange, WebhookBody

_converter = cattrs.Converter()


def payload_text(payload: Payload) -> str:
    if isinstance(payload, WebhookBody):
        return payload.text
    return json.dumps(_converter.unstructure(payload), separators=(",", ":"))


def payload_of(kind: MessageKind, text: str) -> Payload:
    match kind:
        case MessageKind.WEBHOOK:
            return WebhookBody(text)
        case MessageKind.CHAT_ROLE:
            return _converter.structure(json.loads(text), RoleChange)
        case MessageKind.FAN_OUT:
            return _converter.structure(json.loads(text), FanOut)


_AT = columns(Message).index("payload")


def message_row(message: Message) -> list[Any]:
    row = to_row(message)
    row[_AT] = payload_text(message.payload)
    return row


def message_of(row: Sequence[Any]) -> Message:
    message = from_row(Message, row)  # the payload column passes through as its text
    return attrs.evolve(message, payload=payload_of(message.kind, str(row[_AT])))
