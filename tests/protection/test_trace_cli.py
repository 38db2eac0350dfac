"""`licore trace FILE --product ID` on copies made the way buyers get them: a published build
under protection rules, each license's copy prepared by the download path. It names the
license from a whole leaked model file, and from one script with the key cut out and the
code reformatted."""

import asyncio
import random
from pathlib import Path

import pytest

from adapters_formats.codec import RobloxModelCodec
from adapters_storage import open_storage
from licore import commands as c
from licore.actors import ActingStudio
from licore.builds.tree import Instance, Model, Prop, source_of
from licore.licenses import LicenseEvent
from licore.services.wiring import UseCases
from licore_cli.main import main
from tests.protection.test_tracing import PRODUCT, _cut_and_reformat
from tests.support.fakes import TEST_KEK, make_deps
from tests.support.models import script
from tests.support.scenario import build_world

CODEC = RobloxModelCodec()
RULES = {"rules": [{"names": ["Main"], "preset": "strong"},
                   {"paths": ["Game/*"], "preset": "light"}]}


def _model() -> Model:
    children = [script(path.rsplit("/", 1)[-1], source) for path, source in PRODUCT.items()]
    return Model("binary", [Instance("Folder", "game", {"Name": Prop("String", b"Game")},
                                     children)])


async def _copies(url: str, buyers: int) -> tuple[str, dict[str, bytes], dict[str, str]]:
    """A product with a protected live build, and each license's prepared copy."""
    storage = open_storage(url)
    await storage.migrate()
    try:
        deps = make_deps(storage)
        world = await build_world(deps)
        uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
        product = await uc.products.create(studio, c.CreateProduct("Gun"))
        await uc.packages.change_settings(studio, c.ChangeSettings(
            product.id, protection=c.JsonValue(RULES)))
        version = (await uc.packages.upload(studio, c.UploadVersion(
            product.id, "1", CODEC.write(_model())))).version
        await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
        copies, keys = {}, {}
        for i in range(buyers):
            lic = await uc.lifecycle.change(studio, c.ChangeLicense(
                c.LicenseTarget(product.id, str(5000 + i)), LicenseEvent.GRANT))
            async with storage.unit_of_work() as uow:
                stored = await uow.products.by_id(product.id)
                ver = await uow.versions.by_id(version.id)
            assert lic.key_ciphertext is not None and stored and ver
            keys[lic.id] = deps.vault.decrypt(lic.key_ciphertext, lic.id)
            copies[lic.id] = await uc.copies.prepared(lic, stored, ver, keys[lic.id])
        return product.id, copies, keys
    finally:
        await storage.close()


@pytest.fixture
def product(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[str, dict[str, bytes], dict[str, str]]:
    monkeypatch.setenv("LICORE_DATABASE_URL", f"sqlite:///{tmp_path / 'licore.db'}")
    monkeypatch.setenv("LICORE_KEK", TEST_KEK.hex())
    monkeypatch.setenv("LICORE_DATA_DIR", str(tmp_path / "data"))
    return asyncio.run(_copies(f"sqlite:///{tmp_path / 'licore.db'}", 5))


def test_trace_names_the_license_of_a_leaked_model_file(
        product: tuple[str, dict[str, bytes], dict[str, str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    product_id, copies, keys = product
    license_id = list(copies)[2]
    leaked = tmp_path / "Gun.rbxm"
    leaked.write_bytes(copies[license_id])
    main(["trace", str(leaked), "--product", product_id])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == license_id
    assert "the license key appears in" in out  # the key survives in an uncut copy
    assert "carry this license's mark" in out
    assert all(k not in out for k in keys.values())  # evidence never prints a key


def test_trace_names_the_license_of_one_reformatted_script_without_its_key(
        product: tuple[str, dict[str, bytes], dict[str, str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    product_id, copies, keys = product
    license_id = list(copies)[3]
    model = CODEC.read(copies[license_id])
    main_script = next(s for _, s in model.scripts() if s.name == "Main")
    text = source_of(main_script).decode()
    (_, leaked), = _cut_and_reformat([("Game/Main", text)], random.Random(5))
    assert keys[license_id] not in leaked
    file = tmp_path / "Main.lua"
    file.write_text(leaked)
    main(["trace", str(file), "--product", product_id])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == license_id
    assert "Main.lua, line" in "\n".join(lines[1:])


def test_trace_says_when_it_cannot_tell_and_refuses_what_it_cannot_read(
        product: tuple[str, dict[str, bytes], dict[str, str]], tmp_path: Path) -> None:
    product_id, _, _ = product
    file = tmp_path / "Other.luau"
    file.write_text(PRODUCT["ServerScriptService/Gun/Main"])
    with pytest.raises(SystemExit, match=r"cannot tell which license of product(.|\n)*"
                       r"watermark positions, and no license's score reaches"):
        main(["trace", str(file), "--product", product_id])
    with pytest.raises(SystemExit, match="no such product"):
        main(["trace", str(file), "--product", "prd_missing"])
    broken = tmp_path / "Gun.rbxm"
    broken.write_bytes(b"<roblox!\x89\xff\r\n\x1a\n" + bytes(4))
    with pytest.raises(SystemExit, match=r"Gun\.rbxm is neither"):
        main(["trace", str(broken), "--product", product_id])
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(SystemExit, match="neither a model file"):
        main(["trace", str(other), "--product", product_id])


def test_trace_never_names_a_license_whose_key_was_planted_in_a_diluted_copy(
        product: tuple[str, dict[str, bytes], dict[str, str]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The framing attack: one buyer's copy, drowned in 5 MiB of comments, with another
    buyer's key pasted in. The key's license is listed as possibly planted, never named; the
    leaker is named if the keyed sample of the file reached enough of their watermark, else
    the trace cannot tell."""
    product_id, copies, keys = product
    leaker, framed, *_ = list(copies)
    model = CODEC.read(copies[leaker])
    text = next(source_of(s).decode() for _, s in model.scripts() if s.name == "Main")
    file = tmp_path / "Main.lua"
    file.write_text(f'local stolen = "{keys[framed]}"\n' + text
                    + "\n-- padding padding padding\n" * 200_000)
    # The leaker's copy carries the leaker's own key too: when no mark names the leaker
    # (the trace cannot tell), that key is as unexplained as the pasted one, and listed with it.
    try:
        main(["trace", str(file), "--product", product_id])
    except SystemExit as raised:
        said = str(raised.code)
        assert said.startswith(f"licore: cannot tell which license of product {product_id}")
        unexplained = {framed, leaker}
    else:
        said = capsys.readouterr().out
        assert said.splitlines()[0] == leaker
        unexplained = {framed}
    label, _, listed = said.splitlines()[-1].partition(": ")
    assert label == "possibly planted (its key or sealed program appears, no mark names it)"
    assert framed in listed.split(", ") and set(listed.split(", ")) <= unexplained
    assert framed not in said.splitlines()[0]
    assert all(k not in said for k in keys.values())
