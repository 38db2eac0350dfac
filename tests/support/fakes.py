"""Deterministic time and randomness for tests; real adapters for everything else."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from adapters_crypto import AesGcmKeyVault, Argon2Passwords, SystemRandom
from adapters_formats.codec import RobloxModelCodec
from adapters_formats.images import PillowImages
from adapters_protection.luau_protector import LuauProtector
from licore.events import Delivered
from licore.services.deps import Deps, Settings
from licore.storage_ports import Storage


@attrs.define
class FakeClock:
    t: int = 1_800_000_000
    ms: int = 0

    def now(self) -> int:
        return self.t

    def now_ms(self) -> int:
        self.ms += 1  # strictly increasing within a second
        return self.t * 1000 + self.ms % 1000

    def advance(self, seconds: int) -> None:
        self.t += seconds


class FastPasswords(Argon2Passwords):
    """Argon2id with tiny costs, so tests that make many accounts stay quick."""

    def __init__(self) -> None:
        from argon2 import PasswordHasher

        self._hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)


TEST_KEK = bytes(range(32))


def make_deps(storage: Storage, clock: FakeClock | None = None,
              settings: Settings | None = None) -> Deps:
    return Deps(storage=storage, clock=clock or FakeClock(), random=SystemRandom(),
                vault=AesGcmKeyVault(TEST_KEK), passwords=FastPasswords(),
                models=RobloxModelCodec(), protector=LuauProtector(),
                settings=settings or Settings(), images=PillowImages())


class Receiver:
    """The webhook sender's port answered without sending: tests that use it read the
    outbox instead."""

    async def send(self, url: str, message_id: str, timestamp: int, body: str,
                   secrets: Sequence[str]) -> Delivered:
        return Delivered(True, status=204)

    async def refusal(self, url: str) -> str | None:
        return None
