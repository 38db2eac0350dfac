"""A buyer's own copy of a build: the license key injected, then the seller's rules applied.

Pure: the model comes in as a tree and leaves as a tree; reading and writing files is the
codec's job, and the obfuscator sits behind the `Protector` port.
"""

from __future__ import annotations

from collections.abc import Iterator

from licore.builds.tree import CheckedModel, Instance, Model, Sources, set_source, source_of
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


def buyer_source(path: str, source: bytes, placeholder: str, license_key: str,
                 settings: ProtectionSettings, protector: Protector,
                 license_secret: bytes) -> bytes:
    """One script's source in the buyer's copy: the key injected, then the rules applied."""
    token = placeholder.encode()
    if token in source:
        source = source.replace(token, license_key.encode())
    if not settings.transforms_for(path):
        return source
    try:
        text = source.decode("utf-8")
        protected = protector.protect(path, text, settings, license_secret)
    except ProtectionFailed:
        raise
    except Exception as err:  # any failure: no copy rather than a half-protected one
        raise ProtectionFailed([ProtectionProblem(path, 0, type(err).__name__)]) from None
    return protected.encode("utf-8")


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
                  license_secret: bytes) -> Sources:
    """`buyer_copy` over a build read as its sources only; changes `build`."""
    for script in build.scripts:
        script.source = buyer_source(script.path, script.source, placeholder, license_key,
                                     settings, protector, license_secret)
    return build
