"""Time to protect 1 MiB of Luau per preset, as a ratio to just parsing it, and size growth.

Run from the repository root: `.venv/bin/python bench/protect.py`.

Two shapes of 1 MiB, both built from the test corpus (tests/protection/corpus):
- many scripts: the corpus programs repeated under distinct paths, as a product's model
  holds them (about 1,000 scripts of 1 KiB);
- one script: every program wrapped in a function of one big script (the worst case for
  passes that look at a whole script at once).
The baseline is tree-sitter parsing the same text, measured in the same run. The one-script
copy of every preset is also run in the Luau VM and compared with the original. Each is
protected twice: in this process (`protect s`), and as the server does, spread over one
worker process per core (`N procs s`; adapters_protection.processes; best of the runs, so
the pool the first run starts is warm), the copies checked equal to the first.

Then the cost to the buyer, on a realistic script (tests/protection/realistic/shop.luau,
208 lines, 58 string literals, a license key put in): the copy's size and its run time in
the Luau VM, each as a ratio to the original's (run times are the best of interleaved runs
of a longer season of the same game, in CPU time, so other load on the machine counts
least). The targets for `strong` are at most 3x the size and 2x the run time.

Then sealed functions (docs/protection.md, "Sealed functions"): compute-heavy functions
(bench/sealed_programs.py) sealed against the same source unsealed, run in one Luau VM with
the SDK (after the first call, which unlocks, decrypts and compiles once per server); the
target is at most 25x. And the realistic script with its license check and three functions
sealed, under `strong`: its size against the original (target: at most 3x).

Last, the cost of `encrypt_strings` alone: on the realistic script (size against `strip`
alone, which it runs with in every preset; run time against the original) and on a loop that
does nothing but join string literals, 300,000 times (the worst case: every literal read is
a table read, first time a decode).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.protection.vm import run  # noqa: E402
from tests.support.luau_vm import pluau  # noqa: E402

from adapters_protection.fingerprint import DEFAULT_SECRET  # noqa: E402
from adapters_protection.luau_protector import LuauProtector  # noqa: E402
from adapters_protection.processes import ProcessProtector  # noqa: E402
from adapters_protection.syntax import parser  # noqa: E402
from bench.timing import best  # noqa: E402
from licore.protection import ProtectionSettings, parse_protection_settings  # noqa: E402

MIB = 1024 * 1024
PRESETS = ("minify", "light", "strong")
SECRET = b"lk_bench0000000000000000000000000000000000"


def _corpus() -> list[tuple[str, str]]:
    return [(p.stem, p.read_text()) for p in sorted((ROOT / "tests/protection/corpus")
                                                    .glob("*.luau"))]


def many_scripts(size: int) -> list[tuple[str, str]]:
    corpus, scripts, total, i = _corpus(), [], 0, 0
    while total < size:
        name, source = corpus[i % len(corpus)]
        scripts.append((f"ServerScriptService/Copy{i // len(corpus)}/{name}", source))
        total += len(source.encode())
        i += 1
    return scripts


def one_script(size: int) -> str:
    """Programs as functions of one script (programs using getfenv, `export type` or
    directives are left out: they must stay at a script's top level)."""
    usable = [s for _, s in _corpus()
              if "export type" not in s and "--!" not in s and "getfenv" not in s]
    parts, total, i = ["local P = {}"], 0, 0
    while total < size:
        body = usable[i % len(usable)]
        parts.append(f"P[{i + 1}] = function(...)\n{body}\nend")
        total += len(parts[-1].encode()) + 1
        i += 1
    parts.append("for i = 1, 20 do local ok, err = pcall(P[i]) if not ok then print(err) end end")
    return "\n".join(parts)


SHOP = ROOT / "tests/protection/realistic/shop.luau"
KEY = "lk_live_Zx81Qm4TfP0aR7sVb2NcY9dE3hJkLwUo"


def buyer_cost(protector: LuauProtector, repeat: int) -> None:
    source = SHOP.read_text().replace("__LICORE_LICENSE_KEY__", KEY)
    season = source.replace("for round = 1, 12 do", "for round = 1, 60 do")
    copies = {"none": (source, season)}
    for preset in PRESETS:
        rules = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
        copy = protector.protect("ServerScriptService/Shop", source, rules, SECRET)
        assert run(copy) == run(source), f"{preset}: output differs"
        copies[preset] = (copy, protector.protect("ServerScriptService/Shop", season, rules,
                                                  SECRET))
    lua: Any = pluau().Lua()
    chunks = {p: lua.load_chunk("print = function() end " + s, "=" + p)
              for p, (_, s) in copies.items()}
    fastest = dict.fromkeys(chunks, float("inf"))
    for _ in range(max(repeat, 15)):  # interleaved, so a busy moment hits every preset
        for preset, chunk in chunks.items():
            start = time.process_time()
            chunk()
            fastest[preset] = min(fastest[preset], time.process_time() - start)
    print(f"\nrealistic script ({SHOP.name}, {len(source.encode())} bytes): cost to the buyer")
    print(f"{'preset':<8}{'bytes':>8}{'size':>7}{'run ms':>9}{'run time':>10}")
    for preset, (copy, _) in copies.items():
        print(f"{preset:<8}{len(copy.encode()):>8}{len(copy.encode()) / len(source.encode()):>7.2f}"
              f"{fastest[preset] * 1000:>9.1f}{fastest[preset] / fastest['none']:>10.2f}")


LITERAL_LOOP = """
local n = 0
for i = 1, 300000 do
  local s = "alpha" .. "beta" .. (i % 2 == 0 and "gamma" or "delta") .. "epsilon"
  n += #s
end
print(n)
"""


def literal_cost(protector: LuauProtector, repeat: int) -> None:
    shop = SHOP.read_text().replace("__LICORE_LICENSE_KEY__", KEY)
    rules = {name: parse_protection_settings({"rules": [{"paths": ["*"], "transforms": t}]})
             for name, t in (("strip", ["strip"]),
                             ("strings", ["strip", "encrypt_strings"]))}
    print("\nencrypt_strings alone (each literal decoded at its use, under its own key)")
    print(f"{'program':<10}{'rules':<9}{'bytes':>8}{'size':>7}{'run ms':>9}{'run time':>10}")
    lua: Any = pluau().Lua()
    for name, source in (("shop", shop), ("loop", LITERAL_LOOP)):
        copies = {"none": source} | {
            r: protector.protect("ServerScriptService/Bench", source, rules[r], SECRET)
            for r in rules}
        for copy in copies.values():
            assert run(copy) == run(source), f"{name}: output differs"
        chunks = {r: lua.load_chunk("print = function() end " + c, "=" + r)
                  for r, c in copies.items()}
        fastest = dict.fromkeys(chunks, float("inf"))
        for _ in range(max(repeat, 9)):
            for r, chunk in chunks.items():
                start = time.process_time()
                chunk()
                fastest[r] = min(fastest[r], time.process_time() - start)
        for r, copy in copies.items():
            size = len(copy.encode()) / len(copies["strip"].encode())
            print(f"{name:<10}{r:<9}{len(copy.encode()):>8}{size:>7.2f}"
                  f"{fastest[r] * 1000:>9.1f}{fastest[r] / fastest['none']:>10.2f}")
    print("(size against strip alone; run time against the original)")


def sealed_cost(protector: LuauProtector, repeat: int) -> None:
    from tests.protection.sealed_vm import SealedWorld

    from bench.sealed_programs import PROGRAMS

    world = SealedWorld(SECRET)
    rules = parse_protection_settings({"rules": [{"paths": ["*"], "transforms": ["strip"]}]})
    print("\nsealed functions against the same functions unsealed (one VM, CPU time)")
    print(f"{'program':<19}{'orig ms':>9}{'sealed ms':>11}{'ratio':>7}")
    for name, source in PROGRAMS.items():
        plain = source.replace("--@sealed\n", "")
        copy = protector.protect("ServerScriptService/Bench", source, rules, SECRET)
        assert "LicoreSealed" in copy
        assert world.run(copy) == run(plain), f"{name}: output differs"
        quiet = "print = function() end "
        original = world.lua.load_chunk(quiet + plain, "=original")
        sealed = world.lua.load_chunk(quiet + copy, "=sealed")
        sealed()  # unlocked and compiled once per server, as in a game
        fastest = {"original": float("inf"), "sealed": float("inf")}
        for _ in range(max(repeat, 5)):
            for label, chunk in (("original", original), ("sealed", sealed)):
                start = time.process_time()
                chunk()
                fastest[label] = min(fastest[label], time.process_time() - start)
        print(f"{name:<19}{fastest['original'] * 1000:>9.1f}{fastest['sealed'] * 1000:>11.1f}"
              f"{fastest['sealed'] / fastest['original']:>7.1f}")
    shop = SHOP.read_text().replace("__LICORE_LICENSE_KEY__", KEY)
    for name in ("local function verifyLicense", "function Shop:buy",
                 "local function bestWeapon", "function Shop:playRound"):
        shop = shop.replace(name, "--@sealed\n" + name, 1)
    strong = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
    copy = protector.protect("ServerScriptService/Shop", shop, strong, SECRET)
    assert world.run(copy) == run(shop), "sealed shop: output differs"
    print(f"realistic script, strong with 4 functions sealed: {len(copy.encode())} bytes, "
          f"{len(copy.encode()) / len(shop.encode()):.2f}x the original")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--repeat", type=int, default=3)
    args.add_argument("--size", type=int, default=MIB)
    args.add_argument("--only-buyer-cost", action="store_true")
    args.add_argument("--only-sealed", action="store_true")
    args.add_argument("--only-protect", action="store_true",
                      help="the table of protecting 1 MiB only")
    opts = args.parse_args()
    protector = LuauProtector()
    if opts.only_sealed:
        sealed_cost(protector, opts.repeat)
        return
    if opts.only_buyer_cost:
        buyer_cost(protector, opts.repeat)
        literal_cost(protector, opts.repeat)
        return
    ts = parser()
    processes = os.cpu_count() or 1
    spread = ProcessProtector(DEFAULT_SECRET, processes)
    shapes = {"many scripts": many_scripts(opts.size),
              "one script": [("ServerScriptService/Big", one_script(opts.size))]}
    print(f"{'shape':<14}{'preset':<8}{'scripts':>8}{'MiB in':>8}{'parse s':>9}"
          f"{'protect s':>11}{'ratio':>8}{'size':>7}{f'{processes} procs s':>13}"
          f"{'ratio':>7}")
    for shape, scripts in shapes.items():
        size_in = sum(len(s.encode()) for _, s in scripts)
        def parse(scripts: list[tuple[str, str]] = scripts) -> None:
            for _, source in scripts:
                ts.parse(source.encode())

        t_parse = best(parse, opts.repeat)
        for preset in PRESETS:
            rules = parse_protection_settings({"rules": [{"paths": ["*"], "preset": preset}]})
            outputs: list[str] = []

            def protect(scripts: list[tuple[str, str]] = scripts,
                        rules: ProtectionSettings = rules, outputs: list[str] = outputs) -> None:
                outputs[:] = [protector.protect(p, s, rules, SECRET) for p, s in scripts]

            t_protect = best(protect, opts.repeat)
            size_out = sum(len(o.encode()) for o in outputs)
            if shape == "one script":
                assert run(outputs[0]) == run(scripts[0][1]), f"{preset}: output differs"
            spread_out: list[str] = []

            def protect_spread(scripts: list[tuple[str, str]] = scripts,
                               rules: ProtectionSettings = rules,
                               spread_out: list[str] = spread_out) -> None:
                spread_out[:] = spread.protect_all(scripts, rules, SECRET)

            t_spread = best(protect_spread, opts.repeat)
            assert spread_out == outputs, f"{preset}: the processes' copies differ"
            print(f"{shape:<14}{preset:<8}{len(scripts):>8}{size_in / MIB:>8.2f}"
                  f"{t_parse:>9.3f}{t_protect:>11.2f}{t_protect / t_parse:>8.0f}"
                  f"{size_out / size_in:>7.2f}{t_spread:>13.2f}{t_spread / t_parse:>7.0f}")
    spread.close()
    if opts.only_protect:
        return
    buyer_cost(protector, opts.repeat)
    sealed_cost(protector, opts.repeat)
    literal_cost(protector, opts.repeat)


if __name__ == "__main__":
    main()
