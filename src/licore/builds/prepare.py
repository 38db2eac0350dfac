"""A buyer's own copy of a build: the license key injected, then the seller's rules applied.

Pure: the model comes in as a tree and leaves as a tree; reading and writing files is the
codec's job, and the obfuscator sits behind the `Protector` port.
"""

from __future__ import annotations

from collections.abc import Iterator

from licore.builds.tree import Instance, Model, set_source, source_of
from licore.model import VersionScript
from licore.protection import (
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


def stored_scripts(version_id: str, model: Model) -> list[VersionScript]:
    """The seller's sources as uploaded, for /verify-source's byte-exact comparison."""
    return [VersionScript(version_id, i, script.name, path, source_of(script))
            for i, (path, script) in enumerate(model.scripts())]


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


def buyer_copy(model: Model, placeholder: str, license_key: str, settings: ProtectionSettings,
               protector: Protector, license_secret: bytes) -> Model:
    """Inject the key into every script Source, then apply the rules; changes `model`."""
    token, key = placeholder.encode(), license_key.encode()
    for path, script, _ in script_texts(model):
        source = source_of(script)
        if token in source:
            source = source.replace(token, key)
            set_source(script, source)
        if not settings.transforms_for(path):
            continue
        try:
            text = source.decode("utf-8")
            protected = protector.protect(path, text, settings, license_secret)
        except ProtectionFailed:
            raise
        except Exception as err:  # any failure: no copy rather than a half-protected one
            raise ProtectionFailed([ProtectionProblem(path, 0, type(err).__name__)]) from None
        set_source(script, protected.encode("utf-8"))
    return model
