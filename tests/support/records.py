"""Storage records built by number, and a small seed of them, for tests of the ports."""

from __future__ import annotations

from licore.licenses import LicenseState, Source
from licore.model import Account, ApiKey, Client, License, Product, Studio
from licore.scopes import KeyKind
from licore.storage_ports import UnitOfWork


def account(n: int, username: str | None = None) -> Account:
    return Account(f"acc_{n}", str(n), username or f"user{n}", None, n)


def studio(n: int, owner: str = "acc_1", place_limit: int = 3) -> Studio:
    return Studio(f"std_{n}", f"Studio {n}", owner, place_limit, n)


def product(n: int, studio_id: str = "std_1", discoverable: bool = False) -> Product:
    return Product(id=f"prd_{n}", studio_id=studio_id, slug="", title=f"P{n}", tagline="",
                   description="", price_credit=0, discoverable=discoverable,
                   licensing_enabled=True, created_at=n, updated_at=n)


def license(n: int, product_id: str = "prd_1", platform_id: str = "2",
            state: LicenseState = LicenseState.ACTIVE) -> License:
    return License(id=f"lic_{n}", product_id=product_id, platform_id=platform_id,
                   source=Source.GRANT, state=state, verified_at=n, created_at=n,
                   key_digest=f"digest{n}")


def key(n: int, client_id: str = "cli_1", studio_id: str | None = "std_1",
        account_id: str = "acc_1") -> ApiKey:
    return ApiKey(f"key_{n}", f"kd{n}", KeyKind.STUDIO if studio_id else KeyKind.LIBRARY,
                  ("products:read",), client_id, account_id, studio_id, n, n)


async def seed(uow: UnitOfWork) -> None:
    """An owner (acc_1) with a studio (std_1), a buyer (acc_2), an app (cli_1), a product."""
    assert await uow.accounts.add(account(1))
    assert await uow.accounts.add(account(2))
    assert await uow.studios.add(studio(1))
    assert await uow.clients.add(Client("cli_1", "App", "", ("products:read",), False, 0))
    await uow.products.add(product(1), "p")
