"""A unit of work makes only the repositories its use case asks for (on every adapter): most
units of work reach one to three of the nineteen, and making them all was work each paid."""

from __future__ import annotations

from licore.storage_ports import Storage, UnitOfWork

REPOSITORIES = ("accounts", "studios", "clients", "devices", "api_keys", "products",
                "versions", "copies", "licenses", "alerts", "blacklist", "outbox", "hooks",
                "images", "audit", "runtime", "counters", "idempotency", "usage")


def _made(uow: UnitOfWork) -> set[str]:
    return set(vars(uow)) & set(REPOSITORIES)


async def test_a_unit_of_work_makes_a_repository_when_first_asked(storage: Storage) -> None:
    async with storage.unit_of_work() as uow:
        assert _made(uow) == set()
        assert await uow.products.by_id("prd_none") is None
        assert _made(uow) == {"products"}
        assert uow.products is uow.products  # made once, then the same one
        assert await uow.licenses.by_id("lic_none") is None
        assert _made(uow) == {"products", "licenses"}
    async with storage.unit_of_work() as uow:
        assert _made(uow) == set()  # each unit of work its own
        # Every repository the port names can still be asked for.
        assert all(getattr(uow, name) is not None for name in REPOSITORIES)
        assert _made(uow) == set(REPOSITORIES)
