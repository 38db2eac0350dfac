"""The parts the composition root chooses (storage, clock, randomness, the key vault, ...)
and the operator's settings. Use cases do not take this bag: `licore.services.wiring`
hands each one the parts it uses."""

from __future__ import annotations

import attrs

from licore.events import Schedule
from licore.ports import (
    ChatService,
    Clock,
    KeyVault,
    ModelCodec,
    Offload,
    PasswordHasher,
    Platform,
    Randomness,
    WebhookSender,
    run_inline,
)
from licore.protection import Protector
from licore.services.ids import Ids
from licore.storage_ports import Storage


@attrs.frozen
class Settings:
    public_url: str = "http://127.0.0.1:8000"
    device_lifetime: int = 600
    device_interval: int = 5
    partner_rate_limit: int = 120  # a key, a minute
    device_code_rate_limit: int = 20  # an IP, a minute
    code_entry_rate_limit: int = 20  # wrong user-code entries, an IP, a minute
    runtime_key_rate_limit: int = 600
    runtime_ip_rate_limit: int = 1200
    alert_window: int = 3600
    max_upload_bytes: int = 50 * 1024 * 1024
    claim_rate_limit: int = 10  # "I bought this" presses, a person, a minute
    # retries of outgoing messages (docs/events.md)
    outbox: Schedule = attrs.field(factory=Schedule)


@attrs.frozen
class Deps:
    storage: Storage
    clock: Clock
    random: Randomness
    vault: KeyVault
    passwords: PasswordHasher
    models: ModelCodec
    protector: Protector
    settings: Settings = Settings()
    offload: Offload = run_inline
    platform: Platform | None = None  # None: purchase-pass claims answer "not set up"
    chat: ChatService | None = None  # None: no chat bot configured, hand-outs wait
    webhooks: WebhookSender | None = None  # None: webhooks are kept, not sent

    def new_id(self, prefix: str) -> str:
        return Ids(self.clock, self.random).new(prefix)
