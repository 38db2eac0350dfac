"""Idempotency keys in storage (`IdempotencyKeys`), on every adapter: a claim takes a free or
expired key and otherwise answers the live record; a key is its owner's; the answer is kept
with the claim; a rolled-back claim leaves nothing; the sweep deletes expired records."""

from __future__ import annotations

import attrs
import pytest

from licore.model import IdempotencyRecord, KeptAnswer
from licore.storage_ports import Storage

ANSWER = KeptAnswer(200, "application/json", b'{"ok":true}')


def _record(owner: str = "studio:stu_1", key: str = "k-1", fingerprint: str = "f1",
            at: int = 100) -> IdempotencyRecord:
    return IdempotencyRecord(owner, key, fingerprint, at, at + 86400)


async def test_a_free_key_is_claimed_and_its_answer_kept(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record(), 100) is None
        await uow.records.idempotency.keep("studio:stu_1", "k-1", ANSWER)
    async with storage.unit_of_work() as uow:
        again = await uow.records.idempotency.claim(_record(fingerprint="f2", at=200), 200)
    assert again == attrs.evolve(_record(), answer=ANSWER)


async def test_keys_of_two_owners_never_meet(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record("studio:stu_1"), 100) is None
        await uow.records.idempotency.keep("studio:stu_1", "k-1", ANSWER)
        assert await uow.records.idempotency.claim(_record("studio:stu_2"), 100) is None
        assert await uow.records.idempotency.claim(_record("person:acc_1"), 100) is None


async def test_a_rolled_back_claim_leaves_the_key_free(storage: Storage) -> None:
    with pytest.raises(RuntimeError):
        async with storage.unit_of_work() as uow:
            assert await uow.records.idempotency.claim(_record(), 100) is None
            await uow.records.idempotency.keep("studio:stu_1", "k-1", ANSWER)
            raise RuntimeError("the call failed")
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record(), 100) is None


async def test_an_expired_key_is_taken_afresh_and_swept(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record(at=100), 100) is None
        await uow.records.idempotency.keep("studio:stu_1", "k-1", ANSWER)
        assert await uow.records.idempotency.claim(_record("studio:stu_1", "k-2", at=100),
                                                   100) is None
    later = 100 + 86400
    async with storage.unit_of_work() as uow:
        # At its expiry the record is gone for good: the key runs again, with any request.
        assert await uow.records.idempotency.claim(_record(fingerprint="f9", at=later),
                                                   later) is None
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record(fingerprint="f1", at=later + 1),
                                                   later + 1) == _record(fingerprint="f9", at=later)
        assert await uow.records.idempotency.sweep(later) == 1  # k-2, expired and never retried
        assert await uow.records.idempotency.sweep(later) == 0
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record("studio:stu_1", "k-2", at=later),
                                                   later) is None


async def test_a_large_binary_answer_is_kept_byte_for_byte(storage: Storage) -> None:
    body = bytes(range(256)) * 400
    async with storage.unit_of_work() as uow:
        assert await uow.records.idempotency.claim(_record(), 100) is None
        await uow.records.idempotency.keep("studio:stu_1", "k-1", KeptAnswer(201, "x/y", body))
    async with storage.unit_of_work() as uow:
        kept = await uow.records.idempotency.claim(_record(), 100)
    assert kept is not None and kept.answer == KeptAnswer(201, "x/y", body)
