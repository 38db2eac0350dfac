"""`encrypt_strings`: the cipher round-trips every byte, each literal and each license
enciphers differently, long literals decode, and the tracer's reading needs the secret."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters_protection.cipher import CipherParameters, readable_literals
from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from tests.protection.vm import run

LIGHT = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "light"}]})
STRONG = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})


@settings(max_examples=60, deadline=None)
@given(value=st.binary(max_size=200), secret=st.binary(min_size=1, max_size=40),
       nonce=st.integers(0, 2**20 - 1))
def test_the_cipher_round_trips_and_keeps_length(value: bytes, secret: bytes,
                                                 nonce: int) -> None:
    params = CipherParameters.of(secret)
    enciphered = params.encipher(value, nonce)
    assert len(enciphered) == len(value)
    assert params.decipher(enciphered, nonce) == value


def _ciphertexts(copy: str) -> list[str]:
    """The ciphertext of each use, written beside its key (the watermark may write the key
    in hexadecimal or with a leading zero)."""
    return re.findall(r'\((?:0[xX][0-9a-fA-F]+|\d+),"((?:[^"\\]|\\.)*)"\)', copy)


def test_literals_encipher_differently_per_use_and_per_license() -> None:
    source = 'local a = "aaaaaaaaaaaaaaaaaaaaaaaa"\nlocal b = "bbbbbbbbbbbbbbbbbbbbbbbb"\n' \
        'print(a, b, a == "aaaaaaaaaaaaaaaaaaaaaaaa")'
    one = _ciphertexts(LuauProtector().protect("G/S", source, LIGHT, b"license-1"))
    two = _ciphertexts(LuauProtector().protect("G/S", source, LIGHT, b"license-2"))
    # each use has a key of its own: equal strings used twice are two ciphertexts
    assert len(one) == len(two) == 3 and len(set(one)) == 3
    assert not set(one) & set(two)
    for cipher in one + two:  # a run of one character does not stay a run
        assert len(set(cipher)) > 8
    for rules in (LIGHT, STRONG):
        assert run(LuauProtector().protect("G/S", source, rules, b"license-1")) == run(source)


def test_no_table_holds_the_ciphertexts() -> None:
    """Every ciphertext sits where its literal is used, in a call with its own key; the
    script's top holds the decoder and no string at all."""
    source = 'local KEY = "lk_live_0123456789abcdefghij"\nlocal function f() return "later" end\n' \
        'print(#KEY)'
    out = LuauProtector().protect("G/K", source, LIGHT, b"license-1")
    decoder_end = out.index(")(string")
    # (the watermark may write a field `table.create` as `table["create"]`)
    assert '"' not in re.sub(r'\["\w+"\]', "", out[:decoder_end]).replace("''", "")
    uses = re.findall(r'\(([^()]+)\[(0[xX][0-9a-fA-F]+|\d+)\]or \1\[0(?:x0+)?\]'
                      r'\((0[xX][0-9a-fA-F]+|\d+),"', out)
    assert len(uses) == 2
    assert all(int(a, 0 if a[:2] in ("0x", "0X") else 10) == int(b, 0 if b[:2] in ("0x", "0X")
               else 10) for _, a, b in uses)
    assert len({int(b, 0 if b[:2] in ("0x", "0X") else 10) for _, _, b in uses}) == 2


@pytest.mark.parametrize("length", [63, 64, 65, 129, 5000])
def test_long_literals_decode(length: int) -> None:
    text = "".join(chr(32 + (i * 7) % 95) for i in range(length)).replace("\\", "/")
    text = text.replace('"', "'")
    source = f'local s = "{text}"\nprint(#s, s == "{text}", s:sub(-5))'
    for rules in (LIGHT, STRONG):
        out = LuauProtector().protect("G/Long", source, rules, b"license-1")
        assert text not in out
        assert run(out) == run(source)


def test_only_the_secret_reads_a_copys_literals() -> None:
    key = "lk_live_" + "Q7" * 16
    source = f'local KEY = "{key}"\nlocal function send() return #KEY end\nprint(send())'
    for rules in (LIGHT, STRONG):
        out = LuauProtector().protect("G/K", source, rules, b"license-1")
        assert any(key.encode() in v for v, _ in readable_literals(out, b"license-1"))
        assert not any(key.encode() in v for v, _ in readable_literals(out, b"license-2"))


def _layout(copy: str) -> str:
    """The decoder with its numbers blanked: what a pattern fitted to it would match."""
    end = re.search(r'\(string(\.byte|\["byte"\]),', copy)
    assert end is not None
    decoder = copy[copy.index("(function("):end.start()]
    return re.sub(r"\d+", "#", decoder)


def test_a_pattern_fitted_to_one_copys_decoder_fits_no_other_license() -> None:
    source = 'local KEY = "lk_live_0123456789abcdefghij"\nprint(#KEY)'
    layouts = [_layout(LuauProtector().protect("G/K", source, LIGHT, f"license-{i}".encode()))
               for i in range(6)]
    assert len(set(layouts)) == len(layouts)
