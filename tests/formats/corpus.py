"""The shared corpus of real Roblox files (rbx-test-files, MIT), read in place."""

from pathlib import Path

from tests.support.shared import CORPUS

BINARIES = sorted(p for sub in ("models", "places") for p in (CORPUS / sub).rglob("*")
                  if p.suffix in (".rbxm", ".rbxl"))


def twin(binary: Path) -> Path:
    """The XML file saved from the same content as `binary`."""
    return binary.with_name(binary.name.replace("binary", "xml")).with_suffix(
        ".rbxmx" if binary.suffix == ".rbxm" else ".rbxlx")


def label(path: Path) -> str:
    return str(path.resolve().relative_to(CORPUS.resolve()))


DAMAGE = ("truncate", "flip", "insert")


def damaged(data: bytes, where: int, byte: int, how: str) -> bytes:
    """`data` cut short at `where`, with the byte there flipped, or with a byte put in."""
    out = bytearray(data)
    where %= len(out)
    if how == "truncate":
        del out[where:]
    elif how == "flip":
        out[where] ^= byte or 1
    else:
        out[where:where] = bytes([byte])
    return bytes(out)
