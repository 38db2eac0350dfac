"""Where Roblox's EncodingService exists the SDK hashes through it, and both hashing paths give
the same answers: on the sealing test vectors of docs/sealing.md, RFC 4231, random payloads,
keys and nonces, and forged answers. The service here is the stand-in of encoding_service.py
(the host's SHA-256 behind the API's shape); without the service, or with one that does not
give SHA-256's answer, the SDK keeps its pure Luau path."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from licore.sealing import seal, session_key
from tests.sdk import encoding_service
from tests.sdk.luau_sdk import LuauSdk, as_bytes, method
from tests.sdk.test_client import KEY, FakeRuntime
from tests.sdk.test_hmac_vectors import RFC4231
from tests.sdk.test_roblox_defaults import Roblox, _client
from tests.test_sealing_vectors import VECTORS

_VMS: dict[bool, LuauSdk] = {}


def _vm(native: bool) -> LuauSdk:
    # One VM per path for the whole module: Hypothesis calls the tests many times.
    if native not in _VMS:
        _VMS[native] = LuauSdk(before=encoding_service.install if native else None)
    return _VMS[native]


@pytest.fixture(scope="module")
def native() -> LuauSdk:
    sdk = _vm(True)
    assert sdk.module.get("nativeHashing") is True
    return sdk


@pytest.fixture(scope="module")
def pure() -> LuauSdk:
    sdk = _vm(False)
    assert sdk.module.get("nativeHashing") is False
    return sdk


def _open(sdk: LuauSdk, key: str, nonce: str, cipher: str, tag: str) -> tuple[bytes | None, Any]:
    plain, reason = sdk.call("openSealed", key, nonce, cipher, tag)
    return (None if plain is None else as_bytes(plain)), reason


def _blocks(cipher_hex: str) -> int:
    return (len(cipher_hex) // 2 + 31) // 32


@pytest.mark.parametrize("v", VECTORS, ids=lambda v: v["nonce"] + str(len(v["plaintext"])))
def test_both_paths_open_each_doc_vector_and_the_native_one_hashes_natively(
    native: LuauSdk, pure: LuauSdk, v: dict[str, str]
) -> None:
    before = encoding_service.hash_calls(native.lua)
    got = _open(native, v["license_key"], v["nonce"], v["cipher"], v["tag"])
    calls = encoding_service.hash_calls(native.lua) - before
    assert got == (v["plaintext"].encode("utf-8"), None)
    assert _open(pure, v["license_key"], v["nonce"], v["cipher"], v["tag"]) == got
    # The session key's HMAC and the tag's: two calls each (inner, outer), one of them over
    # the whole cipher text; then two a 32-byte keystream block. No SHA-256 left in Luau.
    assert calls == 2 + 2 + 2 * _blocks(v["cipher"])


@pytest.mark.parametrize(("case", "key", "data", "published", "keep"), RFC4231)
def test_both_paths_give_rfc4231_hmacs(
    native: LuauSdk, pure: LuauSdk, case: int, key: bytes, data: bytes, published: str | None,
    keep: int,
) -> None:
    expected = hmac.new(key, data, hashlib.sha256).digest()
    before = encoding_service.hash_calls(native.lua)
    assert as_bytes(native.call("hmacSha256", key, data)[0]) == expected, f"case {case}"
    # A key longer than a block is hashed first: one more call.
    assert encoding_service.hash_calls(native.lua) - before == (3 if len(key) > 64 else 2)
    assert as_bytes(pure.call("hmacSha256", key, data)[0]) == expected


def test_an_hmac_key_made_once_serves_many_messages_on_the_native_path(native: LuauSdk) -> None:
    k = native.call("hmacKey", b"Jefe")[0]
    for msg in (b"", b"what do ya want for nothing?", b"x" * 200):
        got = as_bytes(native.call("hmacWith", k, msg)[0])
        assert got == hmac.new(b"Jefe", msg, hashlib.sha256).digest()


@settings(max_examples=60, deadline=None)
@given(
    key=st.text(min_size=1, max_size=80),
    nonce=st.text(alphabet="0123456789abcdefABCDEF-", min_size=1, max_size=140),
    plain=st.binary(max_size=700),
)
def test_both_paths_open_random_answers_alike(key: str, nonce: str, plain: bytes) -> None:
    sealed = seal(key, nonce, plain)
    for native in (True, False):
        sdk = _vm(native)
        assert _open(sdk, key, nonce, sealed.cipher, sealed.tag) == (plain, None), native


@settings(max_examples=30, deadline=None)
@given(plain=st.binary(min_size=1, max_size=300), flip=st.integers(min_value=0))
def test_both_paths_refuse_a_flipped_cipher_nibble(plain: bytes, flip: int) -> None:
    sealed = seal(KEY, "n0nce", plain)
    at = flip % len(sealed.cipher)
    nibble = f"{int(sealed.cipher[at], 16) ^ 1:x}"
    forged = sealed.cipher[:at] + nibble + sealed.cipher[at + 1:]
    for native in (True, False):
        assert _open(_vm(native), KEY, "n0nce", forged, sealed.tag) == (None, "tag_mismatch")


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=300))
def test_both_paths_hash_alike(data: bytes) -> None:
    for native in (True, False):
        assert as_bytes(_vm(native).call("sha256", data)[0]) == hashlib.sha256(data).digest()


# Where the pair that is not hex sits matters to the native path, which decodes as it XORs, a
# 32-byte block at a time, four pairs to a word, and the bytes past the last whole block one by
# one: first or last pair of a word, last pair of a block, inside the last partial block.
@pytest.mark.parametrize("cipher", [
    "0g" * 40, "abc", "zz" + "00" * 33, "0" * 64 + "x",
    "00" * 3 + "0G" + "00" * 28, "00" * 31 + "g0", "00" * 33 + "0-", "00" * 64 + "z0" + "00" * 5,
])
def test_cipher_text_that_is_not_hex_is_refused_under_a_matching_tag(
    native: LuauSdk, pure: LuauSdk, cipher: str
) -> None:
    # A tag the server could compute over any text: only the hex check stands in the way.
    nonce = "n0nce"
    tag = hmac.new(session_key(KEY, nonce), f"{nonce}|tag|{cipher}".encode(),
                   hashlib.sha256).hexdigest()
    for sdk in (native, pure):
        assert _open(sdk, KEY, nonce, cipher, tag) == (None, "tag_mismatch")


def test_a_large_update_opens_alike_on_both_paths(native: LuauSdk, pure: LuauSdk) -> None:
    # Counters from one to five digits: the keystream's `nonce|counter` message changes width.
    plain = bytes(range(256)) * (320 * 1024 // 256 + 1)
    sealed = seal(KEY, "a" * 32, plain)
    assert _blocks(sealed.cipher) > 10_000
    before = encoding_service.hash_calls(native.lua)
    assert _open(native, KEY, "a" * 32, sealed.cipher, sealed.tag) == (plain, None)
    assert encoding_service.hash_calls(native.lua) - before == 4 + 2 * _blocks(sealed.cipher)
    assert _open(pure, KEY, "a" * 32, sealed.cipher, sealed.tag) == (plain, None)


STAND_INS = {
    "no EncodingService": """
        game = { GetService = function(_, name)
            error(name .. " is not a valid Service name")
        end }
        Enum = { HashAlgorithm = { Sha256 = 4 } }
    """,
    "no HashAlgorithm enum": """
        game = { GetService = function(_, name)
            return { ComputeBufferHash = function() return buffer.create(32) end }
        end }
        Enum = {}
    """,
    "no Enum at all": """
        game = { GetService = function(_, name)
            return { ComputeBufferHash = function() return buffer.create(32) end }
        end }
    """,
    "a hash that is not SHA-256": """
        game = { GetService = function(_, name)
            return { ComputeBufferHash = function() return buffer.create(32) end }
        end }
        Enum = { HashAlgorithm = { Sha256 = 4 } }
    """,
    "a hash that raises": """
        game = { GetService = function(_, name)
            return { ComputeBufferHash = function() error("Unable to cast value to buffer") end }
        end }
        Enum = { HashAlgorithm = { Sha256 = 4 } }
    """,
    "a hash answering a string": """
        game = { GetService = function(_, name)
            return { ComputeBufferHash = function() return string.rep("\\0", 32) end }
        end }
        Enum = { HashAlgorithm = { Sha256 = 4 } }
    """,
}


@pytest.mark.parametrize("setup", list(STAND_INS), ids=list(STAND_INS))
def test_without_a_working_service_the_sdk_keeps_the_pure_path(setup: str) -> None:
    sdk = LuauSdk(before=lambda lua: lua.load_chunk(STAND_INS[setup], "roblox")())
    assert sdk.module.get("nativeHashing") is False
    v = VECTORS[-1]
    got = _open(sdk, v["license_key"], v["nonce"], v["cipher"], v["tag"])
    assert got == (v["plaintext"].encode("utf-8"), None)


class NativeRoblox(Roblox):
    """The HttpService stand-in of test_roblox_defaults with EncodingService beside it."""

    def install(self, lua: Any) -> None:
        super().install(lua)
        encoding_service.install(lua)


def test_a_game_with_httpservice_and_encodingservice_updates_through_both() -> None:
    roblox = NativeRoblox(FakeRuntime())
    assert roblox.sdk.module.get("nativeHashing") is True
    client = _client(roblox)
    nodes, reason = method(client, "update", "1.0")
    assert reason is None
    assert roblox.sdk.to_python(nodes)[0]["Name"] == "Root"
    assert roblox.seen == [("POST", "application/json", "https://licore.test/runtime/update")]
    after_update = encoding_service.hash_calls(roblox.sdk.lua)
    assert after_update >= 6
    data, reason = method(client, "unlock")
    assert reason is None and roblox.sdk.to_python(data) == {"tier": "gold", "n": 7}
    assert encoding_service.hash_calls(roblox.sdk.lua) > after_update


def _tagged(nonce: str, cipher: str) -> str:
    # The tag the server would send over exactly this text (hex or not).
    return hmac.new(session_key(KEY, nonce), f"{nonce}|tag|{cipher}".encode(),
                    hashlib.sha256).hexdigest()


# The characters on either side of each range of hex digits: 0-9, A-F, a-f.
NEAR_HEX = "/:@G`g"


@pytest.mark.parametrize("place", range(64))
def test_a_character_beside_the_hex_ranges_is_refused_at_every_place_of_a_block(
    native: LuauSdk, pure: LuauSdk, place: int
) -> None:
    # The native path reads each of a block's 64 characters through its place's own table.
    nonce, good = "n0nce", "0123456789abcdef" * 8
    for bad in NEAR_HEX:
        cipher = good[:place] + bad + good[place + 1:]
        for sdk in (native, pure):
            assert _open(sdk, KEY, nonce, cipher, _tagged(nonce, cipher)) == (None, "tag_mismatch")


def test_upper_case_hex_opens_alike_on_both_paths(native: LuauSdk, pure: LuauSdk) -> None:
    plain = bytes(range(256)) + b"tail"  # whole blocks and a partial one, every byte value
    sealed = seal(KEY, "n0nce", plain)
    for cipher in (sealed.cipher.upper(), sealed.cipher.title()):
        for sdk in (native, pure):
            assert _open(sdk, KEY, "n0nce", cipher, _tagged("n0nce", cipher)) == (plain, None)
