"""What a licensed buyer's attacks on sealed code yield, in one run (docs/protection.md,
"What each attacker gets"): the traced-right rate of lifted, renamed and canonicalised
cracks among 200 licenses, colluders who lift and merge, innocents named, framing attempts
that name the planted license (must be 0), and what sealing costs (slowdown against the
same functions unsealed, and a `strong` copy's size against the original).

    .venv/bin/python -m bench.lift_attack [--owners 10] [--licenses 200]
"""

from __future__ import annotations

import argparse
import random
import re

from tests.protection.lift_attack import candidates, lifted, merged

from adapters_protection.luau_protector import LuauProtector
from bench.protect import sealed_cost
from licore.protection import Candidate


def _lift_rates(pool: list[Candidate], owners: int, protector: LuauProtector) -> None:
    rng = random.Random(2026)
    print(f"\nlifted cracks among {len(pool)} licenses (whole product sealed; lift, rename, "
          "canonical forms, license check cut)")
    print(f"{'attack':<34}{'right':>7}{'cannot tell':>13}{'innocent':>10}")
    for label, canonical, gang in (("lift + rename", False, 1),
                                   ("lift + rename + canonical forms", True, 1),
                                   ("2 colluders lift and merge", True, 2),
                                   ("3 colluders lift and merge", True, 3)):
        right = unsure = innocent = 0
        for _ in range(owners):
            members = rng.sample(pool, gang)
            texts = [lifted(c.license_secret, canonical=canonical) for c in members]
            crack = texts[0] if gang == 1 else merged(texts, rng)
            found = protector.trace([("Crack.lua", crack)], pool)
            if found.license_id is None:
                unsure += 1
            elif found.license_id in {c.license_id for c in members}:
                right += 1
            else:
                innocent += 1
        print(f"{label:<34}{right:>4}/{owners:<2}{unsure:>13}{innocent:>10}")


def _framing(protector: LuauProtector) -> None:
    from tests.protection.test_sealed_framing import COPIES, _candidates, _copy, _plant

    forms = ["comment", "strings", "program", "key"]
    attempts = framed = leaker = 0
    for preset in ("light", "strong"):
        for a in range(COPIES):
            for b in range(COPIES):
                if a == b:
                    continue
                for form in forms:
                    leaked = _plant(_copy(a, preset), b, form, False)
                    found = protector.trace([("ServerScriptService/Shop", leaked)],
                                            _candidates())
                    attempts += 1
                    framed += found.license_id == f"lic_{b:02d}"
                    leaker += found.license_id == f"lic_{a:02d}"
    print(f"\nframing: another buyer's sealed program or key planted in a copy ({attempts} "
          f"attempts): the planted license named {framed} times (must be 0), the leaker "
          f"{leaker} times")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--owners", type=int, default=10)
    args.add_argument("--licenses", type=int, default=200)
    args.add_argument("--repeat", type=int, default=3)
    opts = args.parse_args()
    protector = LuauProtector()
    pool = candidates(opts.licenses, "bench")
    sample = lifted(pool[0].license_secret)
    print(f"a lifted crack of the realistic script, whole product sealed: "
          f"{len(sample.splitlines())} lines, "
          f"{len(re.findall(r'local sealed', sample))} functions")
    _lift_rates(pool, opts.owners, protector)
    _framing(protector)
    sealed_cost(protector, opts.repeat)


if __name__ == "__main__":
    main()
