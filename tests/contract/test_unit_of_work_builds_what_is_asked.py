"""A unit of work makes only the repositories its use case asks for (on every adapter), the
bounded contexts' (`records`, `abuse`) included: most units of work reach one to three of
the nineteen, and making them all was work each paid."""

from __future__ import annotations

from licore.storage_ports import Storage

REPOSITORIES = ("accounts", "studios", "clients", "devices", "api_keys", "products",
                "versions", "copies", "licenses", "outbox", "hooks", "images", "audit",
                "abuse", "records")
RECORDS = ("runtime", "counters", "idempotency", "usage")
ABUSE = ("alerts", "blacklist")


def _made(uow: object, names: tuple[str, ...] = REPOSITORIES) -> set[str]:
    return set(vars(uow)) & set(names)


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
        assert await uow.records.counters.count("nobody", 0) == 0
        assert _made(uow) == {"records"} and _made(uow.records, RECORDS) == {"counters"}
        assert _made(uow.abuse, ABUSE) == set() and _made(uow) == {"records", "abuse"}
        # Every repository the port names can still be asked for.
        assert all(getattr(uow, name) is not None for name in REPOSITORIES)
        assert all(getattr(uow.records, name) is not None for name in RECORDS)
        assert all(getattr(uow.abuse, name) is not None for name in ABUSE)
        assert _made(uow) == set(REPOSITORIES)
        assert _made(uow.records, RECORDS) == set(RECORDS)
        assert _made(uow.abuse, ABUSE) == set(ABUSE)
