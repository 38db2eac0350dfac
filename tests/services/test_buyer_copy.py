"""The buyer's copy: the key goes into every script, rules apply, and a rule that fails
leaves no copy at all (never a half-protected one)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.builds.prepare import (
    Kept,
    SameForEveryone,
    buyer_copy,
    buyer_source,
    buyer_sources,
)
from licore.builds.tree import source_of
from licore.errors import LicoreError
from licore.licenses import LicenseEvent
from licore.protection import (
    PRESETS,
    Candidate,
    ProtectionFailed,
    ProtectionProblem,
    ProtectionRule,
    ProtectionSettings,
    Trace,
    protect_each,
)
from licore.services.wiring import UseCases
from licore.storage_ports import Storage
from tests.support.fakes import make_deps
from tests.support.models import LICENSE_SCRIPT, PLACEHOLDER, PLAIN_SCRIPT, product_model
from tests.support.scenario import build_world


class Shouting:
    """Upper-cases what it protects, and fails on one named script."""

    def __init__(self, fail_on: str = "") -> None:
        self.fail_on = fail_on

    def check(self, scripts: Sequence[tuple[str, str]],
              settings: ProtectionSettings) -> list[ProtectionProblem]:
        return []

    def trace(self, scripts: Sequence[tuple[str, str]],
              candidates: Sequence[Candidate]) -> Trace:
        return Trace(None, (), 0, False)

    def protect(self, path: str, source: str, settings: ProtectionSettings,
                license_secret: bytes, *, sealing: str = "") -> str:
        if path.endswith(self.fail_on) and self.fail_on:
            raise ValueError("cannot")
        return source.upper()

    def protect_all(self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings,
                    license_secret: bytes, *, sealing: str = "") -> list[str]:
        return protect_each(self, scripts, settings, license_secret, sealing=sealing)


def test_the_key_replaces_the_placeholder_and_rules_apply_to_selected_scripts() -> None:
    model = product_model(extra=2)
    rules = ProtectionSettings((ProtectionRule(frozenset({"strip"}), names=("Greeter",)),))
    buyer_copy(model, PLACEHOLDER, "lk_abc123", rules, Shouting(), b"secret")
    sources = {s.name: source_of(s) for _, s in model.scripts()}
    assert sources["LicenseCheck"] == LICENSE_SCRIPT.replace(PLACEHOLDER, "lk_abc123").encode()
    assert sources["Greeter"] == PLAIN_SCRIPT.upper().encode()
    assert sources["Extra0"] == b"print(0)\n"


def test_a_failing_rule_raises_instead_of_returning_part_of_a_copy() -> None:
    model = product_model()
    rules = ProtectionSettings((ProtectionRule(frozenset({"strip"}), paths=("*",)),))
    with pytest.raises(ProtectionFailed, match="Greeter"):
        buyer_copy(model, PLACEHOLDER, "lk_abc123", rules, Shouting("Greeter"), b"s")


async def test_a_download_whose_rules_fail_is_a_server_error_and_caches_nothing(
        storage: Storage) -> None:
    deps = attrs.evolve(make_deps(storage), protector=Shouting("Greeter"))
    world = await build_world(deps)
    uc, studio, buyer = UseCases.of(deps), ActingStudio(world.studio.id), ActingPerson(
        world.buyer.id)
    product = await uc.products.create(studio, c.CreateProduct("Fragile"))
    protection = {"rules": [{"paths": ["*"], "preset": "minify"}]}
    await uc.packages.change_settings(studio, c.ChangeSettings(
        product.id, protection=c.JsonValue(protection)))
    data = RobloxModelCodec().write(product_model())
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1", data))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    await uc.lifecycle.change(studio, c.ChangeLicense(
        c.LicenseTarget(product.id, world.buyer.platform_id), LicenseEvent.GRANT))
    with pytest.raises(LicoreError) as caught:
        await uc.library.download(buyer, c.DownloadCopy(product.id))
    assert caught.value.status == 500
    async with storage.unit_of_work() as uow:
        lic = await uow.licenses.for_user(product.id, world.buyer.platform_id)
        assert lic is not None
        assert await uow.copies.get(version.id, lic.id, lic.key_generation) is None
    # With rules that work, the same download succeeds and is cached.
    uc = UseCases.of(attrs.evolve(deps, protector=Shouting()))
    got = await uc.library.download(buyer, c.DownloadCopy(product.id))
    assert b"PRINT(" in got.data


async def test_publishing_is_refused_when_a_rule_cannot_apply_naming_script_and_line(
        storage: Storage) -> None:
    from licore.errors import InvalidRequest
    from tests.support.models import script

    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Broken"))
    model = product_model()
    model.roots[0].children.append(script("Broken", "local x = 1\nlocal = = 2\n"))
    data = RobloxModelCodec().write(model)
    rules = c.JsonValue({"rules": [{"paths": ["*"], "preset": "minify"}]})
    await uc.packages.change_settings(studio, c.ChangeSettings(product.id, protection=rules))
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1", data))).version
    with pytest.raises(InvalidRequest) as refused:
        await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    assert "Product/Broken line 2" in refused.value.description
    async with storage.unit_of_work() as uow:
        stored = await uow.products.by_id(product.id)
    assert stored is not None and stored.current_version_id is None  # nothing changed
    # Without a rule on that script it publishes; then the same rule is refused as a setting.
    await uc.packages.change_settings(studio, c.ChangeSettings(product.id, protection=c.JsonValue(
        {"rules": [{"names": ["Greeter"], "preset": "minify"}]})))
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    with pytest.raises(InvalidRequest, match="Broken"):
        await uc.packages.change_settings(studio, c.ChangeSettings(product.id, protection=rules))


async def test_notes_do_not_stop_publishing_but_a_blocking_problem_beside_them_does(
        storage: Storage) -> None:
    """docs/protection.md: a script calling getfenv keeps its names (a note, not a refusal);
    a refusal names only what blocks."""
    from licore.errors import InvalidRequest
    from tests.support.models import script

    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Env"))
    rules = c.JsonValue({"rules": [{"paths": ["*"], "preset": "light"}]})
    await uc.packages.change_settings(studio, c.ChangeSettings(product.id, protection=rules))
    model = product_model()
    model.roots[0].children.append(script("Env", "local a = 1\nprint(getfenv(1), a)\n"))
    data = RobloxModelCodec().write(model)
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "1", data))).version
    await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    model.roots[0].children.append(script("Broken", "local x = 1\nlocal = = 2\n"))
    data = RobloxModelCodec().write(model)
    version = (await uc.packages.upload(studio, c.UploadVersion(product.id, "2", data))).version
    with pytest.raises(InvalidRequest) as refused:
        await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    assert "Product/Broken line 2" in refused.value.description
    assert "getfenv" not in refused.value.description


async def test_new_rules_answer_what_the_protector_works_around_in_the_live_build(
        storage: Storage) -> None:
    """Changing the rules tries them on the live build (docs/protection.md): a refusal if
    they cannot apply, the notes if they can, as publishing answers them."""
    from tests.support.models import script

    deps = make_deps(storage)
    world = await build_world(deps)
    uc, studio = UseCases.of(deps), ActingStudio(world.studio.id)
    product = await uc.products.create(studio, c.CreateProduct("Env"))
    minify = c.JsonValue({"rules": [{"paths": ["*"], "preset": "minify"}]})
    saved = await uc.packages.change_settings(studio, c.ChangeSettings(product.id,
                                                                       protection=minify))
    assert saved.notes == ()  # nothing live to try them on
    model = product_model()
    model.roots[0].children.append(script("Env", "local a = 1\nprint(getfenv(1), a)\n"))
    version = (await uc.packages.upload(studio, c.UploadVersion(
        product.id, "1", RobloxModelCodec().write(model)))).version
    published = await uc.packages.publish(studio, c.PublishVersion(product.id, version.id))
    assert published.notes == ()  # minify renames nothing
    light = c.JsonValue({"rules": [{"paths": ["*"], "preset": "light"}]})
    saved = await uc.packages.change_settings(studio, c.ChangeSettings(product.id,
                                                                       protection=light))
    assert [(n.path, n.line, n.blocking) for n in saved.notes] == [("Product/Env", 2, False)]
    assert "local names are kept" in saved.notes[0].message
    assert saved.product.protection.rules[0].preset == "light"


class CountingLuau:
    """The real protector, counting what it is asked to protect, by path."""

    def __init__(self) -> None:
        from adapters_protection.luau_protector import LuauProtector

        self.inner = LuauProtector()
        self.asked: list[str] = []

    def check(self, scripts: Sequence[tuple[str, str]],
              settings: ProtectionSettings) -> list[ProtectionProblem]:
        return self.inner.check(scripts, settings)

    def trace(self, scripts: Sequence[tuple[str, str]],
              candidates: Sequence[Candidate]) -> Trace:
        return self.inner.trace(scripts, candidates)

    def protect(self, path: str, source: str, settings: ProtectionSettings,
                license_secret: bytes, *, sealing: str = "") -> str:
        self.asked.append(path)
        return self.inner.protect(path, source, settings, license_secret)

    def protect_all(self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings,
                    license_secret: bytes, *, sealing: str = "") -> list[str]:
        return protect_each(self, scripts, settings, license_secret, sealing=sealing)


def test_scripts_protected_alike_for_every_buyer_are_protected_once() -> None:
    """Under `minify` alone and without the key, a script is the same in every copy: made
    for the first buyer, reused for the next; the key's script and `light` ones are made
    for each buyer. Every copy is what it would be without the reuse."""
    codec = RobloxModelCodec()
    data = codec.write(product_model(extra=2))
    rules = ProtectionSettings((
        ProtectionRule(PRESETS["minify"], names=("Extra0", "Extra1", "LicenseCheck")),
        ProtectionRule(PRESETS["light"], names=("Greeter",))))
    counting, same = CountingLuau(), SameForEveryone()
    copies = []
    for n, key in enumerate(("lk_first0000000000000", "lk_second000000000000")):
        secret = f"secret-{n}".encode()
        reused = buyer_sources(codec.read_sources(data), PLACEHOLDER, key, rules, counting,
                               secret, same)
        fresh = buyer_sources(codec.read_sources(data), PLACEHOLDER, key, rules,
                              counting.inner, secret)
        assert [s.source for s in reused.scripts] == [s.source for s in fresh.scripts]
        copies.append({s.path: s.source for s in reused.scripts})
    assert sorted(counting.asked) == sorted(
        ["Product/Extra0", "Product/Extra1"] + ["Product/LicenseCheck", "Product/Greeter"] * 2)
    assert copies[0]["Product/Extra0"] == copies[1]["Product/Extra0"]
    assert b"lk_second" in copies[1]["Product/LicenseCheck"]


class Signing(Shouting):
    """Marks each protected script with the license it was made for, as sealing does."""

    def protect(self, path: str, source: str, settings: ProtectionSettings,
                license_secret: bytes, *, sealing: str = "") -> str:
        return f"{source} -- for {license_secret.decode()}"


def test_a_script_with_sealed_functions_is_made_for_each_buyer_even_under_minify() -> None:
    """Sealed functions are a program encrypted under the license's own key: a script that
    may hold them is never one made once and shared, whatever its other rules."""
    rules = ProtectionSettings((ProtectionRule(PRESETS["minify"], names=("Shop", "Plain")),))
    same = SameForEveryone()
    sealed = b"--@sealed\nlocal function price() return 5 end\nreturn price"
    made = {name: [buyer_source(f"Product/{name}", source, PLACEHOLDER, "lk_x", rules,
                                Signing(), secret, same)
                   for secret in (b"one", b"two")]
            for name, source in (("Shop", sealed), ("Plain", b"return 1"))}
    assert made["Shop"] == [sealed + b" -- for one", sealed + b" -- for two"]
    assert made["Plain"] == [b"return 1 -- for one"] * 2  # shared: the first buyer's


def test_what_is_kept_for_every_buyer_stays_within_its_bound() -> None:
    same = SameForEveryone(limit=10)
    strip = frozenset({"strip"})

    def key(path: str) -> Kept:
        return SameForEveryone.key(path, strip, b"x")

    for i in range(5):
        same.keep(key(f"p{i}"), b"%04d" % i)
    # Only the last two (8 bytes) are still kept: an older one is gone.
    assert [same.kept(key(f"p{i}")) for i in (4, 3, 2)] == [b"0004", b"0003", None]
    same.keep(key("big"), b"more than ten")  # bigger than the bound: not kept
    assert same.kept(key("big")) is None
    assert same.kept(key("p4")) == b"0004"
