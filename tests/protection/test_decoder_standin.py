"""The string decoder goes through flatten, strip and the watermark as a stand-in, and is put
in finished at the end; flatten reads the scopes of the original carried through the literal
pass. Both must leave copies as the passes would with the decoder written out and the copy
analysed again."""

import re
from pathlib import Path

import pytest

from adapters_protection import luau_protector
from adapters_protection.luau_protector import LuauProtector
from adapters_protection.watermark import read
from licore.protection import parse_protection_settings
from tests.protection.vm import run

CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.luau"))
RULES: dict[str, dict[str, object]] = {
    "light": {"preset": "light"},
    "strong": {"preset": "strong"},
    "unstripped": {"transforms": ["rename_locals", "encrypt_strings", "flatten", "watermark"]},
}
# A decoder in a copy, however the watermark wrote its field accesses.
_DECODER = re.compile(r'\(function\(\w,\w\)local .*?\(string(?:\.byte|\["byte"\]),'
                      r'string(?:\.char|\["char"\])\)', re.DOTALL)


def _copies(rules: str, monkeypatch: pytest.MonkeyPatch | None = None) -> list[str]:
    rule: dict[str, object] = {"paths": ["*"], **RULES[rules]}
    settings = parse_protection_settings({"rules": [rule]})
    if monkeypatch is not None:  # the decoder written out, and flatten analysing anew
        monkeypatch.setattr(luau_protector, "decoder_standin", lambda data: False)
    protector = LuauProtector()
    return [protector.protect("Game/" + p.stem, p.read_text(), settings, b"license-secret")
            for p in CORPUS]


@pytest.mark.parametrize("rules", sorted(RULES))
def test_copies_are_those_made_with_the_decoder_written_out(
        rules: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spliced = _copies(rules)
    written_out = _copies(rules, monkeypatch)
    assert any("LicoreDecoder" in c for c in written_out) is False
    for a, b in zip(spliced, written_out, strict=True):
        # The tracer reads the very same bits off both.
        assert [(p, bit) for p, bit, _ in read(a)] == [(p, bit) for p, bit, _ in read(b)]
        # And the code around the decoder is the same. (Where the watermark's scanner
        # reads the decoder as part of a string, the written-out decoder kept its plain
        # forms; the finished one has its bits, which nothing reads there either.)
        assert _DECODER.sub("D", a) == _DECODER.sub("D", b)
    same = sum(a == b for a, b in zip(spliced, written_out, strict=True))
    assert same >= len(CORPUS) - 2


def test_a_script_spelling_the_standin_keeps_its_decoder_written_out() -> None:
    source = 'LicoreDecoder = "a"\nprint(LicoreDecoder .. "b", ("c"):upper())\n'
    settings = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
    copy = LuauProtector().protect("Game/S", source, settings, b"license-secret")
    assert copy.count("LicoreDecoder") == 2
    assert run(copy) == run(source) == "ab C"
