"""The parts the composition root chooses (storage, clock, randomness, the key vault, ...)
and the operator's settings. Use cases do not take this bag: `licore.services.wiring`
hands each one the parts it uses. The HTTP adapter never sees it (an import-linter
contract): it is given the built use cases."""

from __future__ import annotations

import attrs

from licore.ports import (
    ChatService,
    Clock,
    Compressor,
    ImageCodec,
    KeyVault,
    ModelCodec,
    Offload,
    PasswordHasher,
    Platform,
    Randomness,
    SingleFlight,
    UpdateFileStore,
    WebhookSender,
    run_alone,
    run_inline,
)
from licore.protection import Protector
from licore.services.ids import Ids
from licore.services.settings import Settings

__all__ = ["Deps", "Settings"]
from licore.storage_ports import Storage


@attrs.frozen
class Deps:
    storage: Storage
    clock: Clock
    random: Randomness
    vault: KeyVault
    passwords: PasswordHasher
    models: ModelCodec
    protector: Protector
    settings: Settings = attrs.field(factory=Settings)
    offload: Offload = run_inline
    once: SingleFlight = run_alone  # concurrent callers wanting one piece of work share it
    platform: Platform | None = None  # None: purchase-pass claims answer "not set up"
    chat: ChatService | None = None  # None: no chat bot configured, hand-outs wait
    webhooks: WebhookSender | None = None  # None: webhooks are kept, not sent
    images: ImageCodec | None = None  # None: product images are refused (docs/web.md)
    # None: /update never answers with a file (docs/runtime.md, "Updates as files")
    update_files: UpdateFileStore | None = None
    compressor: Compressor | None = None  # None: update files are never compressed

    def new_id(self, prefix: str) -> str:
        return Ids(self.clock, self.random).new(prefix)
