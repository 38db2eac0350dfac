"""Updates as files (extension, docs/runtime.md "Updates as files"): a buyer's `/update`
nodes for one version, encrypted once under a key of their own and kept as an immutable
file that any server, proxy or CDN may hand out, since only the license's holder can open
it. `/update` then seals just the file's key and digest (a few hundred bytes) instead of the
whole build on every call.

The cipher (docs/sealing.md, "Update files"): keystream block `i` is
SHA-256(key || i as 4 bytes, little-endian), 32 bytes each, XORed with the nodes' JSON text.
One hash a block, so a game server opens 5 MiB with 163,840 native hash calls. The file's
SHA-256, sealed beside the key, is what makes it tamper-evident: the keystream alone would
let anyone flip bits of the text.

A file of the `+zstd` forms holds the text zstd-compressed before it was encrypted, for a
game server that decompresses natively: a fraction of the bytes on the wire and to decrypt.

The key is a function of the license's protection secret (which only the server can make),
the version, the file's form, the key generation and the digest of the nodes' text: the
same text always makes the same file (so every host makes identical bytes, and a host
missing the file remakes it), and a different text never shares a keystream."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable

import attrs

_BLOCK = 32
# A file's name: its SHA-256 and its size in bytes (content-addressed, so a name is one
# content forever, and its size is known without reading it).
NAME = re.compile(r"[0-9a-f]{64}-[0-9]{1,12}")


@attrs.frozen
class FileForm:
    """What a file holds: the nodes in one form, and whether they were zstd-compressed
    before they were encrypted (for a reader that decompresses natively)."""

    compact: bool
    zstd: bool = False

    @property
    def name(self) -> str:
        return ("compact" if self.compact else "tagged") + ("+zstd" if self.zstd else "")

    @classmethod
    def named(cls, name: str) -> FileForm:
        nodes, _, packed = name.partition("+")
        return cls(nodes == "compact", packed == "zstd")


@attrs.frozen
class UpdateFile:
    """What storage keeps about a copy's file: its name and the digest of the text it holds
    (what its key is made from)."""

    name: str
    text_sha256: str

    @property
    def sha256(self) -> str:
        return self.name.split("-", 1)[0]

    @property
    def size(self) -> int:
        return int(self.name.split("-", 1)[1])


@attrs.frozen
class FileOwner:
    """Whose copy a file holds: enough to remake it from the kept nodes."""

    version_id: str
    license_id: str
    key_generation: int
    form: FileForm
    text_sha256: str


def file_key(license_secret: bytes, version_id: str, key_generation: int, form: FileForm,
             text_sha256: str) -> bytes:
    return hmac.new(license_secret, f"update-file|{version_id}|{key_generation}|{form.name}|"
                    f"{text_sha256}".encode(), hashlib.sha256).digest()


def keystream_xor(key: bytes, data: bytes) -> bytes:
    """`data` XOR the keystream of `key`: encrypts and decrypts alike."""
    sha = hashlib.sha256
    blocks = (len(data) + _BLOCK - 1) // _BLOCK
    stream = b"".join([sha(key + i.to_bytes(4, "little")).digest() for i in range(blocks)])
    n = len(data)
    # One XOR of two big integers: CPython does it in C, a byte at a time would not.
    return (int.from_bytes(data, "little")
            ^ int.from_bytes(stream[:n], "little")).to_bytes(n, "little")


@attrs.frozen
class MadeFile:
    file: UpdateFile
    data: bytes = attrs.field(repr=False)  # the encrypted bytes
    key: bytes = attrs.field(repr=False)


def make_file(license_secret: bytes, version_id: str, key_generation: int, form: FileForm,
              text: bytes, compress: Callable[[bytes], bytes] | None = None) -> MadeFile:
    """The file of `text` (a copy's nodes as JSON; `compress` for a form that is
    compressed): the same bytes whoever makes it with the same compressor."""
    text_sha256 = hashlib.sha256(text).hexdigest()
    key = file_key(license_secret, version_id, key_generation, form, text_sha256)
    if form.zstd:
        assert compress is not None
        text = compress(text)
    data = keystream_xor(key, text)
    name = f"{hashlib.sha256(data).hexdigest()}-{len(data)}"
    return MadeFile(UpdateFile(name, text_sha256), data, key)
