"""A stand-in for Roblox's `EncodingService` (API 697) in the Luau VM, for the SDK's native
hashing path.

Shaped from the Roblox engine API reference: `game:GetService("EncodingService")` gives the
service; `EncodingService:ComputeBufferHash(input: buffer, algorithm: Enum.HashAlgorithm) ->
buffer` returns the digest as a new buffer; `Enum.HashAlgorithm` has the items Blake2b (0),
Blake3 (1), Md5 (2), Sha1 (3) and Sha256 (4). The digest comes from the host: a Luau wrapper
reads the buffer out and calls a Python function that runs `hashlib`, so every native hash the
SDK asks for is one VM callback, and the callback's cost is in any time measured.

`CompressBuffer(input, Enum.CompressionAlgorithm.Zstd, level)` and `DecompressBuffer(input,
Enum.CompressionAlgorithm.Zstd)` (the engine's buffer compression; the reference names the
methods, the Zstd item is this stand-in's reading of it) run the host's zstandard the same
way, for update files the server compressed.

`install` composes with a `game` a test has already set (such as the HttpService stand-in of
test_roblox_defaults): other service names go to that one.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import zstandard

PRELUDE = """
local host_hash, previous = __host_hash, game
__host_hash = nil
local calls = { 0 }
-- Library functions as upvalues: this chunk is loaded before the sandbox makes the globals
-- safe, so its global look-ups would stay slow ones on every call.
local writeu32, create, tostr, typeof_ = buffer.writeu32, buffer.create, buffer.tostring, typeof
local function item(name, value)
    return table.freeze({ Name = name, Value = value, EnumType = "HashAlgorithm" })
end
local HashAlgorithm = table.freeze({
    Blake2b = item("Blake2b", 0), Blake3 = item("Blake3", 1), Md5 = item("Md5", 2),
    Sha1 = item("Sha1", 3), Sha256 = item("Sha256", 4),
})
local EncodingService = {}
local Sha256 = HashAlgorithm.Sha256
function EncodingService:ComputeBufferHash(input, algorithm)
    if typeof_(input) ~= "buffer" then
        error("Unable to cast value to buffer")
    end
    if algorithm ~= Sha256 then
        error("the stand-in computes Sha256 only")
    end
    calls[1] += 1
    -- The digest comes back as eight u32 (little-endian) numbers: pluau hands numbers over
    -- faster than a string or a buffer, and copying them in costs eight writes.
    local w1, w2, w3, w4, w5, w6, w7, w8 = host_hash(tostr(input))
    local out = create(32)
    writeu32(out, 0, w1)
    writeu32(out, 4, w2)
    writeu32(out, 8, w3)
    writeu32(out, 12, w4)
    writeu32(out, 16, w5)
    writeu32(out, 20, w6)
    writeu32(out, 24, w7)
    writeu32(out, 28, w8)
    return out
end
if previous == nil then
    local absent = setmetatable({}, { __index = function(_, name)
        error("the EncodingService stand-in has no HttpService: " .. tostring(name))
    end })
    previous = { GetService = function(_, name) return absent end }
end
game = {
    GetService = function(self, name)
        if name == "EncodingService" then
            return EncodingService
        end
        return previous:GetService(name)
    end,
}
-- Buffer (de)compression, Zstd only, through the host's zstandard: what an update file the
-- server compressed needs.
local CompressionAlgorithm = table.freeze({ Zstd = table.freeze({ Name = "Zstd", Value = 0,
    EnumType = "CompressionAlgorithm" }) })
local host_pack, host_unpack, fromstr = __host_zstd_pack, __host_zstd_unpack, buffer.fromstring
__host_zstd_pack, __host_zstd_unpack = nil, nil
function EncodingService:CompressBuffer(input, algorithm, level)
    if typeof_(input) ~= "buffer" or algorithm ~= CompressionAlgorithm.Zstd then
        error("Unable to cast value to buffer")
    end
    return fromstr(host_pack(tostr(input), level))
end
function EncodingService:DecompressBuffer(input, algorithm)
    if typeof_(input) ~= "buffer" or algorithm ~= CompressionAlgorithm.Zstd then
        error("Unable to cast value to buffer")
    end
    return fromstr(host_unpack(tostr(input)))
end
Enum = { HashAlgorithm = HashAlgorithm, CompressionAlgorithm = CompressionAlgorithm }
__encoding = { calls = calls }
"""


def install(lua: Any) -> None:
    """Sets `game` (wrapping any earlier one) and `Enum` as globals, before the sandbox."""
    sha256 = hashlib.sha256
    words = struct.Struct("<8I").unpack

    def host_hash(_lua: Any, args: tuple[Any, ...]) -> tuple[int, ...]:
        return words(sha256(args[0].as_bytes()).digest())

    def host_pack(_lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
        level = int(args[1]) if len(args) > 1 and args[1] is not None else 3
        packed = zstandard.ZstdCompressor(level=level).compress(args[0].as_bytes())
        return (lua.create_string(packed),)

    def host_unpack(_lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
        return (lua.create_string(zstandard.ZstdDecompressor().decompress(args[0].as_bytes())),)

    lua.globals().set("__host_hash", lua.create_function(host_hash))
    lua.globals().set("__host_zstd_pack", lua.create_function(host_pack))
    lua.globals().set("__host_zstd_unpack", lua.create_function(host_unpack))
    lua.load_chunk(PRELUDE, "EncodingService")()


def hash_calls(lua: Any) -> int:
    """How many times the SDK has called ComputeBufferHash in this VM."""
    return int(lua.globals().get("__encoding").get("calls").get(1))
