"""A buyer's own copy of a build: the license key injected, then the seller's rules applied.

Pure: the model comes in as a tree and leaves as a tree; reading and writing files is the
codec's job, and the obfuscator sits behind the `Protector` port.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence

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


Kept = tuple[str, frozenset[str], bytes]  # path, transforms, SHA-256 of the source


class SameForEveryone:
    """Protected sources that are the same in every buyer's copy (no key in the script, and
    only transforms of `SAME_FOR_EVERY_LICENSE`), made once and kept, in this process, up to
    `limit` bytes of them (the oldest go first). Shared by the threads that make copies."""

    def __init__(self, limit: int = 64 << 20) -> None:
        self.limit = limit
        self._kept: dict[Kept, bytes] = {}
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def key(path: str, transforms: frozenset[str], source: bytes) -> Kept:
        return path, transforms, hashlib.sha256(source).digest()

    def kept(self, key: Kept) -> bytes | None:
        with self._lock:
            return self._kept.get(key)

    def keep(self, key: Kept, made: bytes) -> None:
        with self._lock:
            if key not in self._kept and len(made) <= self.limit:
                self._kept[key] = made
                self._size += len(made)
                while self._size > self.limit:
                    self._size -= len(self._kept.pop(next(iter(self._kept))))


def buyer_texts(scripts: Sequence[tuple[str, bytes]], placeholder: str, license_key: str,
                settings: ProtectionSettings, protector: Protector, license_secret: bytes,
                same: SameForEveryone | None = None, *, sealing: str = "") -> list[bytes]:
    """Each (path, source)'s source in the buyer's copy: the key injected, then the rules
    applied. The scripts left to protect go to the protector together, so an adapter can
    protect a big build's scripts in several processes at once."""
    out, todo = _injected(scripts, placeholder, license_key, settings, same)
    made = _protected([(path, source) for _, path, source, _ in todo], settings, protector,
                      license_secret, sealing)
    for (i, _, _, shared), text in zip(todo, made, strict=True):
        out[i] = text
        if shared is not None and same is not None:
            same.keep(shared, text)
    return out


# (index, path, source, the key it is kept under when the same for everyone)
_Pending = tuple[int, str, bytes, Kept | None]


def _injected(scripts: Sequence[tuple[str, bytes]], placeholder: str, license_key: str,
              settings: ProtectionSettings, same: SameForEveryone | None
              ) -> tuple[list[bytes], list[_Pending]]:
    """Each source with the key in it (or as kept for everyone), and those left to protect."""
    token, key = placeholder.encode(), license_key.encode()
    out: list[bytes] = []
    todo: list[_Pending] = []
    for path, source in scripts:
        keyed = token in source
        source = source.replace(token, key) if keyed else source
        out.append(source)
        transforms = settings.transforms_for(path)
        if not transforms:
            continue
        shared = (SameForEveryone.key(path, transforms, source) if same is not None
                  and not keyed and _same_for_everyone(path, source, transforms, settings)
                  else None)
        kept = same.kept(shared) if same is not None and shared is not None else None
        if kept is not None:
            out[-1] = kept
        else:
            todo.append((len(out) - 1, path, source, shared))
    return out, todo


def _same_for_everyone(path: str, source: bytes, transforms: frozenset[str],
                       settings: ProtectionSettings) -> bool:
    """Whether a script without the key comes out the same in every buyer's copy."""
    return transforms <= SAME_FOR_EVERY_LICENSE and not settings.may_seal(
        path, source.decode("utf-8", "replace"))


def _protected(scripts: list[tuple[str, bytes]], settings: ProtectionSettings,
               protector: Protector, license_secret: bytes, sealing: str) -> list[bytes]:
    """`protector.protect_all` of these scripts, every failure a ProtectionFailed."""
    if not scripts:
        return []
    texts = []
    for path, source in scripts:
        try:
            texts.append((path, source.decode("utf-8")))
        except UnicodeDecodeError:
            raise ProtectionFailed([ProtectionProblem(path, 0, "source is not UTF-8 "
                                                      "text")]) from None
    try:
        made = protector.protect_all(texts, settings, license_secret, sealing=sealing)
    except ProtectionFailed:
        raise
    except Exception as err:  # any failure: no copy rather than a half-protected one
        raise ProtectionFailed([ProtectionProblem(
            f"{len(texts)} scripts", 0, type(err).__name__)]) from None
    return [text.encode("utf-8") for text in made]


def buyer_source(path: str, source: bytes, placeholder: str, license_key: str,
                 settings: ProtectionSettings, protector: Protector,
                 license_secret: bytes, same: SameForEveryone | None = None) -> bytes:
    """One script's source in the buyer's copy (`buyer_texts` of one)."""
    return buyer_texts([(path, source)], placeholder, license_key, settings, protector,
                       license_secret, same)[0]


def buyer_copy(model: Model, placeholder: str, license_key: str, settings: ProtectionSettings,
               protector: Protector, license_secret: bytes) -> Model:
    """Inject the key into every script Source, then apply the rules; changes `model`."""
    scripts = [(path, script, source_of(script)) for path, script in model.scripts()]
    made = buyer_texts([(path, source) for path, _, source in scripts], placeholder,
                       license_key, settings, protector, license_secret)
    for (_, script, source), changed in zip(scripts, made, strict=True):
        if changed != source:
            set_source(script, changed)
    return model


def buyer_sources(build: Sources, placeholder: str, license_key: str,
                  settings: ProtectionSettings, protector: Protector,
                  license_secret: bytes, same: SameForEveryone | None = None, *,
                  sealing: str = "") -> Sources:
    """`buyer_copy` over a build read as its sources only; changes `build`. `sealing`
    names the key sealed functions are encrypted under (`licore.sealing.sealing_context`)."""
    made = buyer_texts([(s.path, s.source) for s in build.scripts], placeholder, license_key,
                       settings, protector, license_secret, same, sealing=sealing)
    for script, source in zip(build.scripts, made, strict=True):
        script.source = source
    return build
