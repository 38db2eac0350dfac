"""The test vectors published in docs/sealing.md hold for the code and the spec verifier."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from licore.sealing import open_sealed, seal, session_key, verify_payload
from tests.support import spec_verifier

DOC = Path(__file__).resolve().parents[1] / "docs" / "sealing.md"


def _vectors() -> list[dict[str, str]]:
    blocks = re.findall(r"```vector\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    found = []
    for block in blocks:
        fields = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value
        found.append(fields)
    return found


VECTORS = _vectors()


def test_doc_publishes_enough_vectors() -> None:
    assert len(VECTORS) >= 4
    assert any(v["plaintext"] == "" for v in VECTORS)
    assert any(len(v["cipher"]) > 2 * 32 * 2 for v in VECTORS)


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v["nonce"] + str(len(v["plaintext"])))
def test_vector_matches_code(v: dict[str, str]) -> None:
    assert session_key(v["license_key"], v["nonce"]).hex() == v["session_key"]
    sealed = seal(v["license_key"], v["nonce"], v["plaintext"].encode("utf-8"))
    assert (sealed.cipher, sealed.tag) == (v["cipher"], v["tag"])
    opened = open_sealed(v["license_key"], v["nonce"], v["cipher"], v["tag"])
    assert opened.decode("utf-8") == v["plaintext"]


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v["nonce"] + str(len(v["plaintext"])))
def test_vector_matches_spec_verifier(v: dict[str, str]) -> None:
    plain = spec_verifier.open_envelope(v["license_key"], v["nonce"], v["cipher"], v["tag"])
    assert plain.decode("utf-8") == v["plaintext"]
    if v["plaintext"]:
        body = {"cipher": v["cipher"], "tag": v["tag"]}
        expected = json.loads(v["plaintext"])
        assert spec_verifier.verify(v["license_key"], v["nonce"], body, 0) == expected
        assert verify_payload(v["license_key"], v["nonce"], v["cipher"], v["tag"], 0, None) == (
            expected
        )
