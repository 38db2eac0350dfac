"""Products, their versions (build files and scripts), per-buyer prepared copies, licenses."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import attrs

from adapters_storage.memory.tables import Repository, first, page, replace_if
from licore.licenses import DAY, LicenseState, grace_end, in_force, in_grace
from licore.model import License, Page, Plan, Product, Tier, Version, VersionScript
from licore.ports import LibraryEntry
from licore.products import slug_candidate, unique_slug
from licore.releases import Channel
from licore.storage_ports import Notice
from licore.update_files import FileForm, FileOwner, UpdateFile


class MemoryProducts(Repository):
    async def add(self, product: Product, slug_base: str) -> Product:
        # The SQL adapter's way: the base's twin counter names the slug; a number taken by
        # another title's slug is skipped once, then the id's tail decides.
        taken = {p.slug for p in self.t.products.values()}
        candidates = []
        for _ in range(2):
            self.t.slug_twins[slug_base] = self.t.slug_twins.get(slug_base, 0) + 1
            candidates.append(slug_candidate(slug_base, self.t.slug_twins[slug_base]))
            if candidates[-1] not in taken:
                break
        else:
            candidates.append(unique_slug(slug_base, product.id))
        if candidates[-1] in taken:
            raise RuntimeError("no free slug")
        stored = attrs.evolve(product, slug=candidates[-1])
        self.t.products[product.id] = stored
        return stored

    async def by_id(self, product_id: str) -> Product | None:
        return self.t.products.get(product_id)

    async def hold(self, product_id: str) -> Product | None:
        return await self.by_id(product_id)  # one unit of work at a time already

    async def save(self, product: Product) -> None:
        if product.id in self.t.products:
            self.t.products[product.id] = product

    async def of_studio(self, studio_id: str, limit: int | None,
                        cursor: str | None) -> Page[Product]:
        mine = (p for p in self.t.products.values() if p.studio_id == studio_id)
        return page(mine, lambda p: p.id, limit, cursor)

    async def listed(self) -> Sequence[tuple[Product, str]]:
        return [(p, self.t.studios[p.studio_id].name)
                for p in sorted(self.t.products.values(), key=lambda p: p.id)
                if p.discoverable and p.studio_id in self.t.studios]

    async def set_tiers(self, product_id: str, tiers: Sequence[Tier]) -> None:
        self.t.tiers[product_id] = tuple(tiers)

    async def set_plans(self, product_id: str, plans: Sequence[Plan]) -> None:
        self.t.plans[product_id] = tuple(plans)

    async def plans(self, product_id: str) -> Sequence[Plan]:
        return sorted(self.t.plans.get(product_id, ()), key=lambda p: (p.position, p.id))

    async def tiers(self, product_id: str) -> Sequence[Tier]:
        return sorted(self.t.tiers.get(product_id, ()), key=lambda t: t.name)


class MemoryVersions(Repository):
    async def add(self, version: Version, data: bytes,
                  scripts: Sequence[VersionScript]) -> bool:
        if first(self.t.versions.values(), lambda v: v.product_id == version.product_id
                 and v.label == version.label):
            return False
        self.t.blobs[version.blob_id] = bytes(data)
        self.t.versions[version.id] = version
        self.t.scripts[version.id] = tuple(scripts)
        return True

    async def by_id(self, version_id: str) -> Version | None:
        return self.t.versions.get(version_id)

    async def mark_published(self, version_id: str, channel: Channel) -> None:
        version = self.t.versions.get(version_id)
        if version is not None:
            self.t.versions[version_id] = attrs.evolve(version, published=True,
                                                       channel=channel)

    async def withdraw(self, version_id: str, at: int) -> bool:
        version = self.t.versions.get(version_id)
        if version is None or version.withdrawn_at is not None:
            return False
        self.t.versions[version_id] = attrs.evolve(version, withdrawn_at=at)
        return True

    async def newest_stable(self, product_id: str) -> Version | None:
        stable = [v for v in self.t.versions.values() if v.product_id == product_id
                  and v.published and v.channel is Channel.STABLE and v.withdrawn_at is None]
        return max(stable, key=lambda v: (v.created_at, v.id), default=None)

    async def of_product(self, product_id: str, published_only: bool, limit: int | None,
                         cursor: str | None, with_beta: bool = True) -> Page[Version]:
        def shown(v: Version) -> bool:
            return not published_only or (v.published and v.withdrawn_at is None and (
                with_beta or v.channel is Channel.STABLE))

        mine = (v for v in self.t.versions.values() if v.product_id == product_id and shown(v))
        return page(mine, lambda v: v.id, limit, cursor)

    async def data(self, version: Version) -> bytes:
        return self.t.blobs[version.blob_id]

    async def scripts(self, version_id: str,
                      name: str | None = None) -> Sequence[VersionScript]:
        return sorted((s for s in self.t.scripts.get(version_id, ())
                       if name is None or s.name == name), key=lambda s: s.position)


class MemoryPreparedCopies(Repository):
    async def get(self, version_id: str, license_id: str,
                  key_generation: int) -> bytes | None:
        stored = self.t.copies.get((version_id, license_id))
        return stored[1] if stored is not None and stored[0] == key_generation else None

    async def put(self, version_id: str, license_id: str, key_generation: int,
                  data: bytes) -> None:
        self.t.copies[(version_id, license_id)] = (key_generation, bytes(data))
        self._forget_nodes((version_id, license_id))

    async def nodes(self, version_id: str, license_id: str, key_generation: int,
                    compact: bool) -> bytes | None:
        stored = self.t.copy_nodes.get((version_id, license_id, compact))
        return stored[1] if stored is not None and stored[0] == key_generation else None

    async def put_nodes(self, version_id: str, license_id: str, key_generation: int,
                        compact: bool, copy: bytes, nodes: bytes) -> None:
        stored = self.t.copies.get((version_id, license_id))
        if stored is not None and stored[0] == key_generation and stored[1] == copy:
            self.t.copy_nodes[(version_id, license_id, compact)] = (key_generation,
                                                                    bytes(nodes))

    async def file(self, version_id: str, license_id: str, key_generation: int,
                   form: FileForm) -> UpdateFile | None:
        stored = self.t.update_files.get((version_id, license_id, form))
        return stored[1] if stored is not None and stored[0] == key_generation else None

    async def put_file(self, version_id: str, license_id: str, key_generation: int,
                       form: FileForm, nodes: bytes, file: UpdateFile) -> None:
        kept = self.t.copy_nodes.get((version_id, license_id, form.compact))
        if kept is not None and kept == (key_generation, nodes):
            self.t.update_files[(version_id, license_id, form)] = (key_generation, file)

    async def file_named(self, name: str) -> FileOwner | None:
        for (version_id, license_id, form), (generation, file) in (
                self.t.update_files.items()):
            if file.name == name:
                return FileOwner(version_id, license_id, generation, form,
                                 file.text_sha256)
        return None

    async def drop(self, *, license_id: str | None = None, product_id: str | None = None,
                   version_id: str | None = None) -> None:
        def dropped(of_version: str, of_license: str) -> bool:
            version = self.t.versions.get(of_version)
            return of_license == license_id or of_version == version_id or (
                product_id is not None and version is not None
                and version.product_id == product_id)

        for key in [k for k in self.t.copies if dropped(*k)]:
            del self.t.copies[key]
            self._forget_nodes(key)
        if version_id is not None:
            for compact in (True, False):
                self.t.templates.pop((version_id, compact), None)

    async def template(self, version_id: str, compact: bool) -> bytes | None:
        return self.t.templates.get((version_id, compact))

    async def put_template(self, version_id: str, compact: bool, data: bytes) -> None:
        self.t.templates[(version_id, compact)] = bytes(data)

    def _forget_nodes(self, key: tuple[str, str]) -> None:
        for compact in (True, False):
            self.t.copy_nodes.pop((*key, compact), None)
            for zstd in (True, False):
                self.t.update_files.pop((*key, FileForm(compact, zstd)), None)


class MemoryLicenses(Repository):
    async def add(self, license: License) -> bool:
        if license.id in self.t.licenses or await self.for_user(license.product_id,
                                                                license.platform_id):
            return False
        self.t.licenses[license.id] = license
        return True

    async def for_user(self, product_id: str, platform_id: str) -> License | None:
        return first(self.t.licenses.values(),
                     lambda lic: lic.product_id == product_id and lic.platform_id == platform_id)

    async def by_id(self, license_id: str) -> License | None:
        return self.t.licenses.get(license_id)

    async def by_ids(self, license_ids: Collection[str]) -> dict[str, License]:
        return {i: self.t.licenses[i] for i in license_ids if i in self.t.licenses}

    async def by_key_digest(self, digest: str) -> License | None:
        return first(self.t.licenses.values(), lambda lic: lic.key_digest == digest)

    async def replace(self, license: License, expected: LicenseState) -> bool:
        return replace_if(self.t.licenses, license, expected)

    async def move(self, old: License, expected: LicenseState, new: License) -> bool:
        return await self.replace(old, expected) and await self.add(new)

    async def of_product(self, product_id: str, limit: int | None,
                         cursor: str | None) -> Page[License]:
        mine = (lic for lic in self.t.licenses.values() if lic.product_id == product_id)
        return page(mine, lambda lic: lic.id, limit, cursor)

    async def library_of(self, platform_id: str, limit: int | None,
                         cursor: str | None, now: int | None = None) -> Page[LibraryEntry]:
        entries = []
        for lic in self.t.licenses.values():
            product = self.t.products.get(lic.product_id)
            studio = self.t.studios.get(product.studio_id) if product else None
            if (lic.platform_id == platform_id and lic.state is LicenseState.ACTIVE
                    and (now is None or product is None or in_force(lic, now, product.grace_days))
                    and product is not None and studio is not None):
                entries.append(LibraryEntry(lic, product, studio.name))
        return page(entries, lambda e: e.license.id, limit, cursor)

    async def hold(self, product_id: str, platform_id: str) -> License | None:
        # One unit of work at a time holds the memory store: nothing can change it meanwhile.
        return await self.for_user(product_id, platform_id)

    async def due_notices(self, notice: Notice, now: int, limit: int) -> Sequence[License]:
        def due(lic: License) -> bool:
            if lic.expires_at is None or lic.state is LicenseState.INACTIVE:
                return False
            product = self.t.products.get(lic.product_id)
            grace = product.grace_days if product is not None else None
            if notice is Notice.EXPIRED:
                end = grace_end(lic, grace)
                return end is not None and end <= now
            if notice is Notice.GRACE:
                return lic.state is LicenseState.ACTIVE and in_grace(lic, now, grace)
            days = product.reminder_days if product is not None else None
            return days is not None and lic.expires_at - days * DAY <= now < lic.expires_at

        found = [lic for lic in self.t.licenses.values()
                 if due(lic) and self.t.told.get((lic.id, notice.value)) != lic.expires_at]
        return sorted(found, key=lambda lic: (lic.expires_at or 0, lic.id))[:limit]

    async def mark_told(self, license_id: str, notice: Notice, expires_at: int) -> bool:
        stored = self.t.licenses.get(license_id)
        key = (license_id, notice.value)
        if stored is None or stored.expires_at != expires_at or self.t.told.get(
                key) == expires_at:
            return False
        self.t.told[key] = expires_at
        return True

    async def take_trial(self, product_id: str, platform_id: str, now: int) -> bool:
        if (product_id, platform_id) in self.t.trials:
            return False
        self.t.trials[(product_id, platform_id)] = now
        return True

    async def remember_purchase(self, product_id: str, purchase_key: str, license_id: str,
                                now: int) -> None:
        self.t.purchases.setdefault((product_id, purchase_key), license_id)

    async def by_purchase(self, product_id: str, purchase_key: str) -> License | None:
        found = self.t.purchases.get((product_id, purchase_key))
        return None if found is None else self.t.licenses.get(found)
