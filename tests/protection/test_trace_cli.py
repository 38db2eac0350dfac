"""`licore trace FILE --product ID`: loads the product's licenses and names the one a leaked
script was made for."""

import asyncio
import random
from pathlib import Path

import pytest

from adapters_storage import open_storage
from licore.services import partner
from licore_cli.main import main
from tests.protection.test_tracing import PLACEHOLDER, PRODUCT, _copy, _cut_and_reformat, _key
from tests.support.fakes import TEST_KEK, make_deps
from tests.support.scenario import build_world, key_record


async def _product_with_licenses(url: str, buyers: int) -> tuple[str, dict[str, str]]:
    """A product and its licenses, made through the partner service: license id -> key."""
    storage = open_storage(url)
    await storage.migrate()
    try:
        deps = make_deps(storage)
        world = await build_world(deps)
        key = await key_record(deps, world.studio_key)
        product = await partner.save_product(deps, key, {"title": "Gun"})
        keys = {}
        for i in range(buyers):
            granted = await partner.grant(deps, key, {"product_id": product["id"],
                                                      "user": str(5000 + i)})
            async with storage.transaction() as tx:
                lic = await tx.license_by_id(granted["license"]["id"])
            assert lic is not None and lic.key_ciphertext is not None
            keys[lic.id] = deps.vault.decrypt(lic.key_ciphertext, lic.id)
        return str(product["id"]), keys
    finally:
        await storage.close()


@pytest.fixture
def product(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, str]]:
    monkeypatch.setenv("LICORE_DATABASE_URL", f"sqlite:///{tmp_path / 'licore.db'}")
    monkeypatch.setenv("LICORE_KEK", TEST_KEK.hex())
    monkeypatch.setenv("LICORE_DATA_DIR", str(tmp_path / "data"))
    return asyncio.run(_product_with_licenses(f"sqlite:///{tmp_path / 'licore.db'}", 5))


def test_trace_prints_the_license_and_the_evidence(
        product: tuple[str, dict[str, str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    product_id, keys = product
    license_id, key = list(keys.items())[3]
    (_, leaked), _ = _cut_and_reformat(_copy(key), random.Random(5))
    file = tmp_path / "Main.lua"
    file.write_text(leaked)
    main(["trace", str(file), "--product", product_id])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == license_id
    assert "carry this license's mark" in lines[1] and "Main.lua, line" in lines[1]
    assert all(k not in "\n".join(lines) for k in keys.values())


def test_trace_says_when_no_license_matches(
        product: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    product_id, _ = product
    file = tmp_path / "Other.luau"
    file.write_text(_copy(_key())[0][1])
    with pytest.raises(SystemExit, match="no license of product"):
        main(["trace", str(file), "--product", product_id])


def test_trace_refuses_unknown_products_and_file_types(
        product: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    file = tmp_path / "Main.luau"
    file.write_text(PRODUCT["ServerScriptService/Gun/Main"].replace(PLACEHOLDER, "x"))
    with pytest.raises(SystemExit, match="no such product"):
        main(["trace", str(file), "--product", "prd_missing"])
    model = tmp_path / "Gun.rbxm"
    model.write_bytes(b"<roblox!")
    with pytest.raises(SystemExit, match=r"only \.luau and \.lua"):
        main(["trace", str(model), "--product", product[0]])
