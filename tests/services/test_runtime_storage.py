"""The runtime path carries only what it uses: the runtime's use cases and the buyers' copies
they make are given the storage itself, not the layers the other use cases are given (the
audit trail's repositories, the keyed call's joined transaction). Neither writes what the
trail tells, and no call that reaches them carries an Idempotency-Key, so those layers only
added their cost to every runtime call."""

from __future__ import annotations

from adapters_storage import MemoryStorage
from licore.services.audit import Audited
from licore.services.wiring import UseCases
from tests.support.fakes import make_deps


def test_the_runtime_and_its_copies_get_the_storage_itself() -> None:
    deps = make_deps(MemoryStorage())
    uses = UseCases.of(deps)
    assert uses.runtime.storage is deps.storage
    assert uses.runtime.copies is uses.copies and uses.copies.storage is deps.storage
    # The use cases that change what the trail tells still get the audited storage.
    assert isinstance(uses.licensing.storage, Audited)
    assert isinstance(uses.products.storage, Audited)
