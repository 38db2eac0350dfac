"""A person's library (spec 4.4): what they own, each product's versions, and downloads of
their own protected copy."""

from __future__ import annotations

import json

import attrs

from licore import licenses as lic
from licore import releases
from licore.actors import ActingPerson
from licore.builds.nodes import to_nodes
from licore.commands import DownloadCopy, FollowChannel, ListLibrary, ListLibraryVersions
from licore.errors import NotFound
from licore.model import License, Page, Product, Version
from licore.ports import Clock, KeyVault, LibraryEntry, ModelCodec, Offload
from licore.releases import Channel
from licore.services.builds import Copies, Download
from licore.storage_ports import Storage, UnitOfWork
from licore.usage import Happened, hour_of

NODES_FORMAT = "nodes"  # a Download holding the copy's nodes as JSON, not a model file


@attrs.frozen
class VersionList:
    """Versions of one product; `product` tells which of them is live."""

    product: Product
    page: Page[Version]
    # The channel the person follows, in a person's list (None in a studio's).
    follows: Channel | None = None


async def _platform_id(uow: UnitOfWork, person: ActingPerson) -> str:
    account = await uow.accounts.by_id(person.account_id)
    if account is None:
        raise NotFound("the account behind this key is gone")
    return account.platform_id


async def _held(uow: UnitOfWork, person: ActingPerson, product_id: str,
                now: int | None) -> License:
    """The person's license of the product, if it lets them download (paused and expired
    ones do not)."""
    license = await uow.licenses.for_user(product_id, await _platform_id(uow, person))
    if license is None or not lic.passes_runtime(license.state):
        raise NotFound("no such product in your library")
    product = await uow.products.by_id(product_id) if now is not None else None
    if now is not None and not lic.in_force(license, now,
                                            product.grace_days if product else None):
        raise NotFound("no such product in your library")
    return license


def _missing(command: DownloadCopy, version: Version | None) -> str:
    if not command.version_id:
        return "the product has no live build"
    if version is not None and version.withdrawn_at is not None:
        return "this version was withdrawn by the seller"
    if version is not None and version.published and version.channel is Channel.BETA:
        return "this version is a beta build: follow the beta channel to download it"
    return "no such version"


@attrs.frozen
class Library:
    storage: Storage
    vault: KeyVault
    copies: Copies
    models: ModelCodec  # reads a copy into nodes for `DownloadCopy.nodes`
    offload: Offload
    clock: Clock | None = None  # None: end dates are not looked at (docs/licenses.md)

    def _now(self) -> int | None:
        return self.clock.now() if self.clock is not None else None

    async def list(self, person: ActingPerson, command: ListLibrary) -> Page[LibraryEntry]:
        """Products the person holds an active license for: what they can download."""
        async with self.storage.unit_of_work() as uow:
            platform_id = await _platform_id(uow, person)
            return await uow.licenses.library_of(platform_id, command.page.limit,
                                                 command.page.cursor, self._now())

    async def versions(self, person: ActingPerson,
                       command: ListLibraryVersions) -> VersionList:
        """Published versions, so a buyer can roll back without the seller."""
        async with self.storage.unit_of_work() as uow:
            license = await _held(uow, person, command.product_id, self._now())
            product = await uow.products.by_id(command.product_id)
            if product is None:
                raise NotFound("no such product in your library")
            # Withdrawn builds are not listed; beta builds only to a person following beta.
            page = await uow.versions.of_product(command.product_id, True, command.page.limit,
                                                 command.page.cursor,
                                                 license.channel is Channel.BETA)
        return VersionList(product, page, license.channel)

    async def follow(self, person: ActingPerson, command: FollowChannel) -> License:
        """The release channel the person follows for a product they hold (`beta`: opted
        in to beta builds), kept on their license."""
        channel = Channel(command.channel)
        async with self.storage.unit_of_work() as uow:
            license = await _held(uow, person, command.product_id, self._now())
            if license.channel is not channel:
                license = attrs.evolve(license, channel=channel)
                if not await uow.licenses.replace(license, license.state):
                    raise NotFound("no such product in your library")
        return license

    async def download(self, person: ActingPerson, command: DownloadCopy) -> Download:
        """The live build, or the named published one, as the buyer's own copy (key
        injected, rules applied); never an unprotected copy."""
        async with self.storage.unit_of_work() as uow:
            license = await _held(uow, person, command.product_id, self._now())
            product = await uow.products.by_id(command.product_id)
            wanted = command.version_id or (product.current_version_id if product else None)
            version = await uow.versions.by_id(wanted) if wanted else None
        if product is None or version is None or version.product_id != command.product_id \
                or not releases.may_download(version, license.channel):
            raise NotFound(_missing(command, version))
        if license.key_ciphertext is None:
            raise NotFound("no such product in your library")
        license_key = self.vault.decrypt(license.key_ciphertext, license.id)
        data = await self.copies.prepared(license, product, version, license_key)
        now = self._now()
        if now is not None:  # counted for the usage series (an embedder without a clock: not)
            async with self.storage.unit_of_work() as uow:
                await uow.records.usage.count(product.id, hour_of(now), Happened.DOWNLOAD,
                                              version.label)
        if command.nodes is None:
            return Download(data, version.label, version.format)
        return Download(await self._as_nodes(data, version.label, command.nodes == "compact"),
                        version.label, NODES_FORMAT)

    async def _as_nodes(self, copy: bytes, label: str, compact: bool) -> bytes:
        """The buyer's copy as `{version, instances}` JSON, the shape of a decrypted
        `/update` payload without its nonce."""
        models = self.models

        def make() -> bytes:
            nodes = to_nodes(models.read(copy), compact=compact)
            return json.dumps({"version": label, "instances": nodes}, separators=(",", ":"),
                              ensure_ascii=False).encode()

        return await self.offload(make)
