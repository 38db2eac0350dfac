"""licore's core, for embedding in another Python backend.

The names below are the public API: build a `Deps` from the adapters you choose (or your own
implementations of the ports in `licore.ports`), make the use cases with `UseCases.of(deps)`,
and call them with commands (`licore.commands`) as an acting studio or person
(`licore.actors`). Every refusal is a `LicoreError` carrying the specification's error code.
`docs/embedding.md` walks through it. Anything not named here may change between versions.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from licore import commands, ports, storage_ports
    from licore.actors import ActingPerson, ActingStudio
    from licore.errors import LicoreError
    from licore.licenses import LicenseEvent, LicenseState, Source
    from licore.services.deps import Deps
    from licore.services.settings import Settings
    from licore.services.wiring import UseCases

# Each name is imported when first used: a process that needs one module of the core (the
# `licore` command reading its settings, say) does not pay for all of it at start.
_WHERE = {"ActingPerson": "licore.actors", "ActingStudio": "licore.actors",
          "Deps": "licore.services.deps", "LicenseEvent": "licore.licenses",
          "LicenseState": "licore.licenses", "LicoreError": "licore.errors",
          "Settings": "licore.services.settings", "Source": "licore.licenses",
          "UseCases": "licore.services.wiring"}
_MODULES = ("commands", "ports", "storage_ports")


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    if name in _MODULES:
        return importlib.import_module(f"licore.{name}")
    raise AttributeError(f"module 'licore' has no attribute {name!r}")


__all__ = [
    "ActingPerson",
    "ActingStudio",
    "Deps",
    "LicenseEvent",
    "LicenseState",
    "LicoreError",
    "Settings",
    "Source",
    "UseCases",
    "commands",
    "ports",
    "storage_ports",
]
