"""licore's core, for embedding in another Python backend.

The names below are the public API: build a `Deps` from the adapters you choose (or your own
implementations of the ports in `licore.ports`), make the use cases with `UseCases.of(deps)`,
and call them with commands (`licore.commands`) as an acting studio or person
(`licore.actors`). Every refusal is a `LicoreError` carrying the specification's error code.
`docs/embedding.md` walks through it. Anything not named here may change between versions.
"""

from licore import commands, ports, storage_ports
from licore.actors import ActingPerson, ActingStudio
from licore.errors import LicoreError
from licore.licenses import LicenseEvent, LicenseState, Source
from licore.services.deps import Deps
from licore.services.settings import Settings
from licore.services.wiring import UseCases

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
