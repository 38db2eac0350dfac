"""Update files on this host's disk (licore.update_files): one file a name, in a folder per
first two characters of the name (so no folder holds more than a few thousand), written
under a temporary name and renamed into place, so a reader (this server, or a proxy serving
the folder) sees the whole file or none. Nothing here is secret: each file is encrypted
under a key only its license's holder receives."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class DiskUpdateFiles:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, name: str) -> str:
        return str(self.directory / name[:2] / name)

    def has(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def write(self, name: str, data: bytes) -> None:
        folder = self.directory / name[:2]
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(temporary, 0o644)  # a proxy serving the folder may run as another user
            os.replace(temporary, folder / name)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
