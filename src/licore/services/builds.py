"""Build files on their way to buyers: the prepared copy that a download and `/update` hand
out, and tracing a leaked copy back to its license."""

from __future__ import annotations

import attrs

from licore import licenses as lic
from licore.builds.errors import ModelFormatError
from licore.builds.prepare import SameForEveryone, buyer_sources, script_texts
from licore.builds.tree import ScriptSource
from licore.errors import InvalidRequest, LicoreError, NotFound
from licore.model import License, Product, Version
from licore.ports import KeyVault, ModelCodec, Offload
from licore.protection import (
    Candidate,
    ProtectionFailed,
    Protector,
    Trace,
)
from licore.sealing import sealing_context
from licore.storage_ports import Storage


class PreparationFailed(LicoreError):
    """The copy could not be prepared (a rule failed on a script); nothing is handed out."""

    error = "server_error"
    status = 500


@attrs.frozen
class Download:
    """A buyer's copy of one version."""

    data: bytes = attrs.field(repr=False)
    version: str  # the label, for X-Service-Version
    format: str


SCRIPT_SUFFIXES = (".luau", ".lua")
INLINE_CRYPT_BYTES = 1 << 20  # about half a millisecond of AES-GCM


def copy_context(version_id: str, license_id: str, key_generation: int) -> str:
    """What a stored copy's encryption is bound to."""
    return f"copy|{version_id}|{license_id}|{key_generation}"


def nodes_context(version_id: str, license_id: str, key_generation: int,
                  compact: bool) -> str:
    """What a stored copy's `/update` nodes' encryption is bound to (one form each)."""
    form = "compact" if compact else "tagged"
    return f"nodes-{form}|{version_id}|{license_id}|{key_generation}"


@attrs.frozen
class Prepared:
    """A buyer's copy, as made or read from the cache."""

    copy: bytes = attrs.field(repr=False)
    stored: bytes = attrs.field(repr=False)  # the copy encrypted, as kept
    # The copy's script sources in the codec's `read_sources` order of the stored build,
    # when this call made the copy (None: it came from the cache).
    sources: tuple[ScriptSource, ...] | None = attrs.field(repr=False)


@attrs.frozen
class Copies:
    """Per-buyer copies: made from the stored build (key injected, the seller's rules
    applied), kept while the license's key stands, and traced back when one leaks."""

    storage: Storage
    vault: KeyVault
    models: ModelCodec
    protector: Protector
    offload: Offload
    # Scripts protected alike for every buyer, protected once (per process).
    same: SameForEveryone = attrs.field(factory=SameForEveryone)

    def license_secret(self, license: License) -> bytes:
        """What makes one buyer's protected copy differ from another's: stable for the
        license across re-keys, and unknowable without the server's key."""
        return self.vault.lookup_digest(f"protect|{license.id}").encode()

    async def prepared(self, license: License, product: Product, version: Version,
                       license_key: str) -> bytes:
        """The buyer's own copy of `version`, made once and then served from the cache."""
        return (await self.prepared_and_stored(license, product, version, license_key)).copy

    async def prepared_and_stored(self, license: License, product: Product, version: Version,
                                  license_key: str) -> Prepared:
        """The copy, the encrypted bytes it is stored as (what the nodes kept beside it
        name as the copy they were made from), and its sources when made by this call."""
        where = copy_context(version.id, license.id, license.key_generation)
        data = b""
        async with self.storage.unit_of_work() as uow:
            cached = await uow.copies.get(version.id, license.id, license.key_generation)
            if cached is None:
                data = await uow.versions.data(version)
        if cached is not None:
            return Prepared(await self.decrypt(cached, where), cached, None)
        settings = product.protection

        def prepare() -> tuple[bytes, list[ScriptSource]]:
            # Only the scripts' sources are read and rewritten; the rest goes through as
            # the bytes it was stored as.
            build = self.models.read_sources(data)
            buyer_sources(build, product.placeholder, license_key, settings, self.protector,
                          self.license_secret(license), self.same,
                          sealing=sealing_context(version.id, license.key_generation))
            return self.models.write_sources(build), build.scripts

        try:
            copy, sources = await self.offload(prepare)
        except ProtectionFailed:
            raise PreparationFailed("the build could not be prepared; the seller has been "
                                    "asked to republish it") from None
        stored = await self.encrypt(copy, where)
        async with self.storage.unit_of_work() as uow:
            # Keep it only if the license is still the one it was made for.
            now = await uow.licenses.by_id(license.id)
            if now is not None and now.key_generation == license.key_generation and (
                    lic.passes_runtime(now.state)):
                await uow.copies.put(version.id, license.id, license.key_generation,
                                     stored)
        return Prepared(copy, stored, tuple(sources))

    # A copy holds its buyer's key, so it is stored encrypted (and its nodes too): one
    # AES-GCM call over the blob, here where it meets storage. Big blobs are encrypted off
    # the event loop; small ones (the usual `/update` nodes) are not worth the hop.

    async def encrypt(self, data: bytes, context: str) -> bytes:
        if len(data) < INLINE_CRYPT_BYTES:
            return self.vault.encrypt_blob(data, context)
        return await self.offload(lambda: self.vault.encrypt_blob(data, context))

    async def decrypt(self, sealed: bytes, context: str) -> bytes:
        if len(sealed) < INLINE_CRYPT_BYTES:
            return self.vault.decrypt_blob(sealed, context)
        return await self.offload(lambda: self.vault.decrypt_blob(sealed, context))

    def leaked_scripts(self, name: str, data: bytes) -> list[tuple[str, str]]:
        """The (path, source) scripts of a leaked file: the file itself when it is named as
        a Luau script, else every script of a model file (either format, told apart by
        content)."""
        if name.lower().endswith(SCRIPT_SUFFIXES):
            return [(name, data.decode("utf-8", errors="replace"))]
        try:
            model = self.models.read(data)
        except ModelFormatError as error:
            raise InvalidRequest(f"{name} is neither a model file nor a .luau or .lua script "
                                 f"({error.reason})", "file") from None
        return [(where, text) for where, _, text in script_texts(model) if text is not None]

    async def trace(self, studio_id: str | None, product_id: str, name: str,
                    data: bytes) -> Trace:
        """Which license of the product a leaked file was made for, with the evidence (a
        Trace without a license when it cannot be told). Every license the product ever
        had is a candidate, revoked ones too (a copy may have leaked before): the secret
        its copies were made with, and its key where it still has one (a license without
        one is looked for by its marks alone: its secret never appears in a copy).
        `studio_id` None is the operator, who may trace any product."""
        async with self.storage.unit_of_work() as uow:
            product = await uow.products.by_id(product_id)
            if product is None or (studio_id is not None and product.studio_id != studio_id):
                raise NotFound("no such product")
            licenses = (await uow.licenses.of_product(product_id, None, None)).items
        scripts = await self.offload(lambda: self.leaked_scripts(name, data))
        candidates = [
            Candidate(lc.id, self.license_secret(lc),
                      b"" if lc.key_ciphertext is None
                      else self.vault.decrypt(lc.key_ciphertext, lc.id).encode())
            for lc in licenses]
        return await self.offload(lambda: self.protector.trace(scripts, candidates))
