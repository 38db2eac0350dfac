"""The update file cipher of docs/sealing.md ("Update files"): the published vector holds
for `licore.update_files` and for a decryption written from the page's text alone, and the
file a server makes is a function of its inputs (every host makes the same bytes) whose key
changes with the text (no two texts share a keystream)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from adapters_formats.zstd_text import ZstdText
from licore.update_files import FileForm, keystream_xor, make_file

DOC = Path(__file__).resolve().parents[1] / "docs" / "sealing.md"


def _vector() -> dict[str, str]:
    block = re.search(r"```vector-file\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None, "docs/sealing.md has no vector-file block"
    return dict(line.split(": ", 1) for line in block.group(1).splitlines())


def _from_the_page(key: bytes, data: bytes) -> bytes:
    stream = b""
    i = 0
    while len(stream) < len(data):
        stream += hashlib.sha256(key + i.to_bytes(4, "little")).digest()
        i += 1
    return bytes(a ^ b for a, b in zip(data, stream, strict=False))


def test_the_published_vector_holds_both_ways() -> None:
    v = _vector()
    key, text, file = bytes.fromhex(v["key"]), v["text"].encode(), bytes.fromhex(v["file"])
    assert len(text) > 32 * 2  # more than two blocks, the last one partly used
    assert keystream_xor(key, text) == file == _from_the_page(key, text)
    assert keystream_xor(key, file) == text


def test_a_file_is_the_same_wherever_made_and_its_key_follows_the_text() -> None:
    secret, text = b"s" * 32, b'[{"ClassName":"Folder"}]' * 50
    compact, tagged = FileForm(compact=True), FileForm(compact=False)
    one = make_file(secret, "ver_1", 1, compact, text)
    assert one == make_file(secret, "ver_1", 1, compact, text)
    assert one.file.name == f"{hashlib.sha256(one.data).hexdigest()}-{len(text)}"
    assert one.file.text_sha256 == hashlib.sha256(text).hexdigest()
    assert keystream_xor(one.key, one.data) == text
    packed = make_file(secret, "ver_1", 1, FileForm(compact=True, zstd=True), text,
                       ZstdText().compress)
    assert len(packed.data) < len(text) / 5  # compressed before it was encrypted
    assert ZstdText().decompress(keystream_xor(packed.key, packed.data)) == text
    others = [make_file(secret, "ver_1", 1, compact, text + b" "),
              make_file(secret, "ver_2", 1, compact, text),
              make_file(secret, "ver_1", 2, compact, text),
              make_file(secret, "ver_1", 1, tagged, text),
              make_file(b"t" * 32, "ver_1", 1, compact, text), packed]
    assert len({one.key, *(o.key for o in others)}) == 7
