"""The Luau SDK in the real Luau VM (sandboxed, as Roblox runs it) on both its hashing paths,
against the same work in Python (`licore.sealing`, `hashlib`), all timed in this run.

"pure" is the SDK where `EncodingService` does not exist (SHA-256 in Luau); "native" is the
SDK where it does, here the stand-in of tests/sdk/encoding_service.py: each
`ComputeBufferHash` is a VM callback into the host's SHA-256, so its cost (the callback, the
buffer copied out, the digest copied back) is in the figure. The ratio pure / native must be
at least 5 for the 1 MiB `/update` (the bench says whether it is).

Run from the repository root: `.venv/bin/python -m bench.sdk`; add `--baseline REV` to time
the SDK as it was at git revision REV in the same run (for example the 0.1.0 SDK).

Times are the process's CPU time, best of a few runs, so other work on a shared machine
disturbs them less than wall-clock time would. The two paths take turns (one pure run, then
two native ones, a round), so a change in the machine's load falls on both; for the 1 MiB
`/update` the bench also prints each round's ratio, its spread being the measurement's. The
client is made with `Licore.new` first, so anything the constructor did to the VM's
environment (as `getfenv` once did) is in the figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import time
from collections.abc import Callable

from tests.sdk import encoding_service
from tests.sdk.luau_sdk import LuauSdk

from licore.sealing import Sealed, seal, verify_payload

KEY = "LIC-BENCH-0001"
NONCE = "0123456789abcdef0123456789abcdef"  # what HttpService:GenerateGUID gives, less hyphens
NOW = 1_700_000_000
TARGET_1MIB = 1.6  # seconds: the SDK's budget for verifying and decrypting a 1 MiB /update
NATIVE_SPEEDUP = 5.0  # the native path's least speed-up over pure Luau on the 1 MiB /update


def cpu_best(fn: Callable[[], object], repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        fastest = min(fastest, time.process_time() - start)
    return fastest


def cpu_rounds(pure: Callable[[], object], native: Callable[[], object],
               rounds: int) -> list[tuple[float, float]]:
    """Each round: the pure path once, then the native one twice (its best kept)."""
    return [(cpu_best(pure, 1), cpu_best(native, 2)) for _ in range(rounds)]


def _payload(size: int, kind: str) -> bytes:
    head = {"nonce": NONCE, "version": "1.0", "instances": []} if kind == "update" else {
        "nonce": NONCE, "data": ""}
    filler = "x" * max(0, size - len(json.dumps(head)))
    body = {**head, "data": filler} if kind == "unlock" else {**head, "pad": filler}
    return json.dumps(body).encode()


def _baseline(rev: str, sealed: Sealed) -> float:
    """The 1 MiB /update through the SDK at `rev`, with a client made first as a game would."""
    old = LuauSdk(_sources_at(rev))
    old.client(lambda url, body: (False, 0, ""), license_key=KEY, nonces=[])
    verify = old.module.get("verifyPayload")
    return cpu_best(lambda: verify(KEY, NONCE, sealed.cipher, sealed.tag, NOW, None), 1)


def _sources_at(rev: str) -> dict[str, str]:
    """The SDK package's modules at `rev` by name (one `init` before the modules were split)."""
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:sdk/luau/src"],
                           capture_output=True, text=True, check=True).stdout.split()
    return {name.removesuffix(".luau"): subprocess.run(
        ["git", "show", f"{rev}:sdk/luau/src/{name}"],
        capture_output=True, text=True, check=True).stdout
        for name in names if name.endswith(".luau")}


def _sdk(native: bool) -> LuauSdk:
    sdk = LuauSdk(before=encoding_service.install if native else None)
    assert sdk.module.get("nativeHashing") is native
    # JSON through the SDK's codec: the stand-in `game` has no HttpService to do it.
    sdk.client(lambda url, body: (False, 0, ""), license_key=KEY, nonces=[],
               jsonEncode=sdk.module.get("jsonEncode"), jsonDecode=sdk.module.get("jsonDecode"))
    return sdk


CALLS = """
local service = game:GetService("EncodingService")
local sha256 = Enum.HashAlgorithm.Sha256
-- as long as a keystream block's inner message: ipad, a 32-character nonce, "|", 5 digits
local input = buffer.create(64 + 32 + 1 + 5)
return function(count)
    local compute = service.ComputeBufferHash
    for i = 1, count do
        -- a different message each call, as in the keystream (the stand-in makes a string)
        buffer.writeu32(input, 96, i)
        compute(service, input, sha256)
    end
end
"""


def breakdown(native: LuauSdk, sealed: Sealed, whole: float) -> None:
    """Where the native path's time goes: the service's calls (the stand-in's Luau and its
    host round trip), timed by themselves; what is left of the whole is the SDK's own Luau
    (pads, counter digits, the hex decoded as it is XORed, the tag's message) and JSON."""
    blocks = (len(sealed.cipher) // 2 + 31) // 32
    calls = 2 * blocks + 4
    run = native.lua.load_chunk(CALLS, "calls")()[0]
    t_calls = cpu_best(lambda: run(calls), 3)
    print(f"  native, taken apart: {calls:,} ComputeBufferHash calls by themselves {t_calls:.3f} s"
          f" ({t_calls / calls * 1e6:.1f} us each, {t_calls / whole:.0%} of the whole); the rest,"
          f" the SDK's own Luau and JSON, {max(whole - t_calls, 0.0):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", help="git revision whose SDK to time as well")
    parser.add_argument("--rounds", type=int, default=4,
                        help="rounds of the 1 MiB /update (each: pure once, native twice)")
    args = parser.parse_args()
    pure, native = _sdk(native=False), _sdk(native=True)
    rows: list[tuple[str, float, float, float]] = []
    per_round: dict[str, list[tuple[float, float]]] = {}

    block_data = b"\x5a" * (64 * 4096)

    def hashing(sdk: LuauSdk) -> float:
        sha, data = sdk.module.get("sha256"), sdk.bytes_in(block_data)
        return cpu_best(lambda: sha(data), 3)

    rows.append(("SHA-256, 256 KiB", hashing(pure), hashing(native),
                 cpu_best(lambda: hashlib.sha256(block_data).digest(), 3)))
    for label, size, kind, exp, repeat in [
        ("/unlock, 1 KiB", 1024, "unlock", NOW + 300, 5),
        ("/update, 1 MiB", 1024 * 1024, "update", None, args.rounds),
    ]:
        sealed = seal(KEY, NONCE, _payload(size, kind))

        def opening(sdk: LuauSdk, s: Sealed = sealed,
                    exp: int | None = exp) -> Callable[[], object]:
            verify = sdk.module.get("verifyPayload")

            def luau() -> object:
                got = verify(KEY, NONCE, s.cipher, s.tag, NOW, exp)
                assert got[0] is not None, got
                return got

            return luau

        def python(s: Sealed = sealed, exp: int | None = exp) -> object:
            return verify_payload(KEY, NONCE, s.cipher, s.tag, NOW, exp)

        # The native path is the quicker: more runs of it cost less and steady its figure.
        turns = per_round[label] = cpu_rounds(opening(pure), opening(native), repeat)
        rows.append((label, min(p for p, _ in turns), min(n for _, n in turns),
                     cpu_best(python, repeat)))

    print(f"{'work':<20}{'pure Luau (s)':>15}{'native (s)':>13}{'pure/native':>13}"
          f"{'Python (s)':>13}{'pure/Python':>13}")
    for label, t_pure, t_native, t_py in rows:
        print(f"{label:<20}{t_pure:>15.4f}{t_native:>13.4f}{t_pure / t_native:>12.1f}x"
              f"{t_py:>13.4f}{t_pure / t_py:>12.1f}x")
    per_block = rows[0][1] / 4096 * 1e6
    _, update, update_native, _ = rows[-1]
    print(f"\nSHA-256 in the VM: {per_block:.1f} us a 64-byte block")
    verdict = "within" if update <= TARGET_1MIB else "OVER"
    print(f"1 MiB /update, pure Luau: {update:.2f} s, {verdict} the {TARGET_1MIB} s budget")
    speedup = update / update_native
    verdict = "at least" if speedup >= NATIVE_SPEEDUP else "BELOW"
    print(f"1 MiB /update, native hashing (stand-in included): {update_native:.3f} s,"
          f" {speedup:.1f}x the pure path, {verdict} the {NATIVE_SPEEDUP:.0f}x target")
    each = ", ".join(f"{p / n:.1f}x" for p, n in per_round["/update, 1 MiB"])
    print(f"  pure / native in each round: {each}")
    breakdown(native, seal(KEY, NONCE, _payload(1024 * 1024, "update")), update_native)
    if args.baseline:
        before = _baseline(args.baseline, seal(KEY, NONCE, _payload(1024 * 1024, "update")))
        print(f"1 MiB /update with the SDK at {args.baseline}: {before:.2f} s"
              f" ({before / update:.1f}x this one)")


if __name__ == "__main__":
    main()
