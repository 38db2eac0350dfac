"""New record ids."""

from __future__ import annotations

import attrs

from licore import tokens
from licore.ports import Clock, Randomness


@attrs.frozen
class Ids:
    """Ids that sort by creation time (so `cursor` pages walk a list in creation order) and
    cannot be guessed."""

    clock: Clock
    random: Randomness

    def new(self, prefix: str) -> str:
        return tokens.make_id(prefix, self.clock.now_ms(), self.random.token_bytes(16))
