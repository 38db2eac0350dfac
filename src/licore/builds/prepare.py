"""A buyer's own copy of a build: the license key injected, then the seller's rules applied.

Pure: the model comes in as a tree and leaves as a tree; reading and writing files is the
codec's job, and the obfuscator sits behind the `Protector` port.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator

from licore.builds.tree import CheckedModel, Instance, Model, Sources, set_source, source_of
from licore.model import VersionScript
from licore.protection import (
    SAME_FOR_EVERY_LICENSE,
    ProtectionFailed,
    ProtectionProblem,
    ProtectionSettings,
    Protector,
)


def script_texts(model: Model) -> Iterator[tuple[str, Instance, str | None]]:
    """Each script with its path and its source as text (None when not UTF-8)."""
    for path, script in model.scripts():
        try:
            text: str | None = source_of(script).decode("utf-8")
        except UnicodeDecodeError:
            text = None
        yield path, script, text


def stored_scripts(version_id: str, model: CheckedModel) -> list[VersionScript]:
    """The seller's sources as uploaded, for /verify-source's byte-exact comparison."""
    return [VersionScript(version_id, i, script.name, script.path, script.source)
            for i, script in enumerate(model.scripts)]


def check_protection(model: Model, settings: ProtectionSettings,
                     protector: Protector) -> list[ProtectionProblem]:
    """What stops this build from being published under these rules."""
    problems = []
    scripts = []
    for path, _, text in script_texts(model):
        if text is None:
            if settings.transforms_for(path):
                problems.append(ProtectionProblem(path, 0, "source is not UTF-8 text"))
            continue
        scripts.append((path, text))
    return problems + protector.check(scripts, settings)


class SameForEveryone:
    """Protected sources that are the same in every buyer's copy (no key in the script, and
    only transforms of `SAME_FOR_EVERY_LICENSE`), made once and kept, in this process, up to
    `limit` bytes of them (the oldest go first). Shared by the threads that make copies."""

    def __init__(self, limit: int = 64 << 20) -> None:
        self.limit = limit
        self._kept: dict[tuple[str, frozenset[str], bytes], bytes] = {}
        self._size = 0
        self._lock = threading.Lock()

    def get(self, path: str, transforms: frozenset[str], source: bytes,
            make: Callable[[], bytes]) -> bytes:
        key = (path, transforms, hashlib.sha256(source).digest())
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept
        made = make()
        with self._lock:
            if key not in self._kept and len(made) <= self.limit:
                self._kept[key] = made
                self._size += len(made)
                while self._size > self.limit:
                    self._size -= len(self._kept.pop(next(iter(self._kept))))
        return made


def buyer_source(path: str, source: bytes, placeholder: str, license_key: str,
                 settings: ProtectionSettings, protector: Protector,
                 license_secret: bytes, same: SameForEveryone | None = None) -> bytes:
    """One script's source in the buyer's copy: the key injected, then the rules applied."""
    token = placeholder.encode()
    keyed = token in source
    if keyed:
        source = source.replace(token, license_key.encode())
    transforms = settings.transforms_for(path)
    if not transforms:
        return source
    text = source

    def protect() -> bytes:
        try:
            protected = protector.protect(path, text.decode("utf-8"), settings,
                                          license_secret)
        except ProtectionFailed:
            raise
        except Exception as err:  # any failure: no copy rather than a half-protected one
            raise ProtectionFailed([ProtectionProblem(path, 0, type(err).__name__)]) from None
        return protected.encode("utf-8")

    if (same is None or keyed or not transforms <= SAME_FOR_EVERY_LICENSE
            or settings.may_seal(path, text.decode("utf-8", "replace"))):
        return protect()
    return same.get(path, transforms, source, protect)


def buyer_copy(model: Model, placeholder: str, license_key: str, settings: ProtectionSettings,
               protector: Protector, license_secret: bytes) -> Model:
    """Inject the key into every script Source, then apply the rules; changes `model`."""
    for path, script in model.scripts():
        source = source_of(script)
        changed = buyer_source(path, source, placeholder, license_key, settings, protector,
                               license_secret)
        if changed != source:
            set_source(script, changed)
    return model


def buyer_sources(build: Sources, placeholder: str, license_key: str,
                  settings: ProtectionSettings, protector: Protector,
                  license_secret: bytes, same: SameForEveryone | None = None) -> Sources:
    """`buyer_copy` over a build read as its sources only; changes `build`."""
    for script in build.scripts:
        script.source = buyer_source(script.path, script.source, placeholder, license_key,
                                     settings, protector, license_secret, same)
    return build
