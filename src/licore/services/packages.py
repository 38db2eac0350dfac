"""Packages: a product's build files and its protection settings (contract 4)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import attrs

from licore import releases
from licore.actors import ActingStudio
from licore.builds.errors import ModelFormatError
from licore.builds.prepare import check_protection, stored_scripts
from licore.builds.tree import CheckedModel
from licore.commands import (
    ChangeSettings,
    ListPackages,
    ListPackageVersions,
    PublishVersion,
    UploadVersion,
    WithdrawVersion,
)
from licore.errors import AlreadyExists, InvalidRequest, NotFound, PayloadTooLarge
from licore.events import Topic
from licore.model import Page, Product, UnlockData, Version
from licore.ports import Clock, ModelCodec, Offload
from licore.protection import (
    ProtectionProblem,
    ProtectionSettings,
    Protector,
    parse_protection_settings,
)
from licore.releases import Channel, ReleaseEffect, ReleaseEvent
from licore.services.announce import Announcer, product_data, version_data, withdrawn_data
from licore.services.ids import Ids
from licore.services.library import VersionList
from licore.services.products import held_product, own_product
from licore.storage_ports import Storage, UnitOfWork

# Each setting `ChangeSettings` may send (None: not sent), and the value the product keeps.
_SETTINGS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("placeholder", lambda sent: sent),
    ("verify_scripts", lambda sent: sent),
    ("unlock_data", lambda sent: UnlockData.of(sent.value)),
    ("purchase_pass_id", lambda sent: sent or None),  # "" clears it
    ("hub_place_id", lambda sent: sent or None),  # "" clears it
    # the command checked the rules against their schema already
    ("protection", lambda sent: parse_protection_settings(sent.value)),
)

@attrs.frozen
class Package:
    """A product as a package: its labels, oldest first."""

    product: Product
    labels: tuple[str, ...]


@attrs.frozen
class ProductVersion:
    """A version with its product (which tells whether it is live)."""

    product: Product
    version: Version
    # What the protector works around in this build's scripts (publishing only).
    notes: tuple[ProtectionProblem, ...] = ()


@attrs.frozen
class SettingsChanged:
    """A product's settings as saved; with new protection rules and a live build, what the
    protector works around in that build's scripts under them."""

    product: Product
    notes: tuple[ProtectionProblem, ...] = ()


def _problems_text(problems: list[ProtectionProblem]) -> str:
    shown = "; ".join(f"{p.path}{f' line {p.line}' if p.line else ''}: {p.message}"
                      for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return shown + more


async def _version_of(uow: UnitOfWork, product_id: str, version_id: str) -> Version:
    version = await uow.versions.by_id(version_id)
    if version is None or version.product_id != product_id:
        raise NotFound("no such version")
    return version


async def _live_data(uow: UnitOfWork, product: Product) -> tuple[Version, bytes] | None:
    if product.current_version_id is None:
        return None
    live = await uow.versions.by_id(product.current_version_id)
    return None if live is None else (live, await uow.versions.data(live))


@attrs.frozen
class Packages:
    storage: Storage
    clock: Clock
    ids: Ids
    models: ModelCodec
    protector: Protector
    offload: Offload
    max_upload_bytes: int
    announce: Announcer

    async def list(self, studio: ActingStudio, command: ListPackages) -> Page[Package]:
        async with self.storage.unit_of_work() as uow:
            page = await uow.products.of_studio(studio.studio_id, command.page.limit,
                                                command.page.cursor)
            packages = [Package(p, tuple(v.label for v in (
                await uow.versions.of_product(p.id, False, None, None)).items)) for p in page.items]
        return Page(tuple(packages), page.next_cursor)

    async def versions(self, studio: ActingStudio,
                       command: ListPackageVersions) -> VersionList:
        """Drafts too, oldest first."""
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, command.product_id)
            page = await uow.versions.of_product(command.product_id, False, command.page.limit,
                                                 command.page.cursor)
        return VersionList(product, page)

    def _check_model(self, data: bytes) -> CheckedModel:
        try:
            return self.models.check(data)
        except ModelFormatError as error:
            raise InvalidRequest(f"the file is not a valid model: {error.reason}",
                                 "body") from None
        except RecursionError:
            raise InvalidRequest("the file is not a valid model: nested too deeply",
                                 "body") from None

    async def upload(self, studio: ActingStudio, command: UploadVersion) -> ProductVersion:
        """A new draft version, checked by parsing before it is stored."""
        data = command.data
        if len(data) > self.max_upload_bytes:
            raise PayloadTooLarge(f"the file is larger than {self.max_upload_bytes} bytes")
        if not data:
            raise InvalidRequest("the body must be the model file", "body")
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)  # before any parsing work
        # Checking and hashing a large file take long enough to stall other requests.
        model, digest = await self.offload(
            lambda: (self._check_model(data), hashlib.sha256(data).hexdigest()))
        version = Version(id=self.ids.new("ver"), product_id=command.product_id,
                          label=command.version, format=model.format, size_bytes=len(data),
                          sha256=digest, blob_id=self.ids.new("blb"),
                          published=False, created_at=self.clock.now())
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, command.product_id)
            if not await uow.versions.add(version, data, stored_scripts(version.id, model)):
                raise AlreadyExists(f"version {command.version} already exists for this "
                                    "product")
        return ProductVersion(product, version)

    async def _check_rules(self, data: bytes, settings: ProtectionSettings,
                           what: str) -> tuple[ProtectionProblem, ...]:
        """Refuse rules that cannot be applied to every script of the build in `data`; the
        notes, if not. Runs outside any transaction: parsing a large build must not hold the
        database."""

        def problems() -> list[ProtectionProblem]:
            return check_protection(self.models.read(data), settings, self.protector)

        found = await self.offload(problems)
        # Notes (names kept in a script that calls getfenv, types erased from syntax newer
        # than the grammar) say how a rule was worked around: they do not stop a build.
        blocking = [p for p in found if p.blocking]
        if blocking:
            raise InvalidRequest(f"{what}: the protection rules cannot be applied safely: "
                                 f"{_problems_text(blocking)}", "protection")
        return tuple(found)

    async def publish(self, studio: ActingStudio, command: PublishVersion) -> ProductVersion:
        """That version goes live, once the seller's protection rules are known to apply to
        every script in it."""
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, command.product_id)
            version = await _version_of(uow, command.product_id, command.version_id)
            # Refused before the rules are tried on it (a withdrawn build, stable to beta).
            releases.transition(version, releases.publish_event(Channel(command.channel)))
            data = await uow.versions.data(version)
        notes = await self._check_rules(data, product.protection, f"version {version.label}")
        channel = Channel(command.channel)
        async with self.storage.unit_of_work() as uow:
            current = await held_product(uow, studio, command.product_id)
            if current.protection != product.protection:
                raise InvalidRequest("the protection rules changed while publishing; try "
                                     "again", "protection")
            version = await _version_of(uow, command.product_id, command.version_id)
            go = releases.transition(version, releases.publish_event(channel))
            product = current
            for effect in go.effects:
                match effect:
                    case ReleaseEffect.GO_LIVE:
                        product = releases.go_live(product, version)
                    case ReleaseEffect.GO_BETA:
                        product = releases.go_beta(product, version)
                    case ReleaseEffect.TELL_PUBLISHED:
                        version = attrs.evolve(version, published=True, channel=channel)
                        await self.announce.event(uow, studio.studio_id,
                                                  Topic.VERSION_PUBLISHED,
                                                  version_data(product, version))
            product = attrs.evolve(product, updated_at=self.clock.now())
            await uow.products.save(product)
            await uow.versions.mark_published(version.id, channel)
        return ProductVersion(product, version, notes)

    async def withdraw(self, studio: ActingStudio, command: WithdrawVersion) -> ProductVersion:
        """The build is offered and downloadable no more; if it was live, the newest
        stable version left goes live (`licore.releases`)."""
        async with self.storage.unit_of_work() as uow:
            product = await held_product(uow, studio, command.product_id)
            version = await _version_of(uow, command.product_id, command.version_id)
            go = releases.transition(version, ReleaseEvent.WITHDRAW)
            if not go.effects:
                return ProductVersion(product, version)  # withdrawn before: nothing to do
            now = self.clock.now()
            if not await uow.versions.withdraw(version.id, now):
                return ProductVersion(product, version)  # a concurrent withdraw came first
            version = attrs.evolve(version, withdrawn_at=now)
            # Copies of a build nobody may download again are dead weight.
            await uow.copies.drop(version_id=version.id)
            was = product
            for effect in go.effects:
                match effect:
                    case ReleaseEffect.FALL_BACK:
                        product = releases.fall_back(
                            product, version, await uow.versions.newest_stable(product.id))
                        if product != was:
                            product = attrs.evolve(product, updated_at=now)
                            await uow.products.save(product)
                    case ReleaseEffect.TELL_WITHDRAWN:
                        await self.announce.event(uow, studio.studio_id,
                                                  Topic.VERSION_WITHDRAWN,
                                                  withdrawn_data(was, product, version))
        return ProductVersion(product, version)

    async def change_settings(self, studio: ActingStudio, command: ChangeSettings
                              ) -> SettingsChanged:
        """Placeholder, "Verify scripts", unlock data and protection rules; new rules are
        first tried on every script of the live build."""
        changes = {name: kept(getattr(command, name)) for name, kept in _SETTINGS
                   if getattr(command, name) is not None}
        async with self.storage.unit_of_work() as uow:
            product = await own_product(uow, studio, command.product_id)
            live = await _live_data(uow, product) if "protection" in changes else None
        notes: tuple[ProtectionProblem, ...] = ()
        if live is not None:
            notes = await self._check_rules(live[1], changes["protection"],
                                            f"live version {live[0].label}")
        async with self.storage.unit_of_work() as uow:
            product = await held_product(uow, studio, command.product_id)
            if live is not None and product.current_version_id != live[0].id:
                raise InvalidRequest("the live version changed while the rules were checked; "
                                     "try again", "protection")
            product = attrs.evolve(product, **changes, updated_at=self.clock.now())
            await uow.products.save(product)
            if {"protection", "placeholder"} & changes.keys():
                # Copies made under the old rules or token are stale.
                await uow.copies.drop(product_id=product.id)
            await self.announce.event(uow, studio.studio_id, Topic.PRODUCT_CHANGED,
                                      product_data(product, list(changes)))
        return SettingsChanged(product, notes)
