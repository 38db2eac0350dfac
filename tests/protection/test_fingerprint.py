"""The Tardos code behind the watermark, simulated with a fixed seed: coalitions of two and
three buyers, whatever they do where their copies differ (pick at random, vote, vote for
the minority, always 1, always 0), put one of them over the threshold set for 1,000
licenses and an overall chance of 1e-6, at 600 and 1,200 positions; no innocent license
comes near it. `positions_needed` states the same lengths for the docs."""

from __future__ import annotations

import math
import random

import pytest

from adapters_protection import fingerprint

LICENSES = 1000
CHANCE = 1e-6 / 2 / LICENSES  # the watermark's share, per license (tracing.CHANCE)
STRATEGIES = ("interleave", "majority", "minority", "ones", "zeros")


def _leak(codes: list[list[int]], strategy: str, rng: random.Random) -> list[int]:
    out = []
    for bits in zip(*codes, strict=True):
        ones = sum(bits)
        if ones in (0, len(bits)):  # the colluders cannot see this position
            out.append(bits[0])
        elif strategy == "interleave" or ones * 2 == len(bits):
            out.append(rng.choice(bits))
        elif strategy in ("majority", "minority"):
            out.append(int((ones * 2 > len(bits)) == (strategy == "majority")))
        else:
            out.append(int(strategy == "ones"))
    return out


@pytest.mark.parametrize(("colluders", "positions"), [(2, 600), (3, 1200)])
def test_coalitions_are_caught_and_innocents_never_named(colluders: int,
                                                         positions: int) -> None:
    rng = random.Random(colluders)
    bias = fingerprint.bias_key(b"simulated product")
    for _ in range(3):
        ids = [rng.randbytes(12) for _ in range(positions)]
        guilty = [fingerprint.bits_key(rng.randbytes(32)) for _ in range(colluders)]
        codes = [fingerprint.code_bits(bias, key)(ids) for key in guilty]
        for strategy in STRATEGIES:
            observed = fingerprint.Observed(
                dict(zip(ids, _leak(codes, strategy, rng), strict=True)), bias)
            z = observed.threshold(CHANCE)
            assert max(observed.score(key) for key in guilty) >= z, strategy
            innocents = [observed.score(fingerprint.bits_key(rng.randbytes(32)))
                         for _ in range(60)]
            assert max(innocents) < 0.7 * z, strategy


def test_an_innocent_score_has_mean_zero_and_unit_variance_per_position() -> None:
    rng = random.Random(5)
    bias = fingerprint.bias_key(b"simulated product")
    ids = [rng.randbytes(12) for _ in range(400)]
    observed = fingerprint.Observed({i: rng.randrange(2) for i in ids}, bias)
    scores = [observed.score(fingerprint.bits_key(rng.randbytes(32))) for _ in range(400)]
    mean = sum(scores) / len(scores)
    variance = sum((s - mean) ** 2 for s in scores) / len(scores)
    assert abs(mean) < 3  # the mean of 400 scores of standard deviation 20
    assert 0.8 * 400 < variance < 1.2 * 400


def test_the_threshold_bounds_what_it_says() -> None:
    """The Chernoff threshold sits above the normal approximation's (it is a bound) but not
    far above it; and the chance read back at the threshold is the one asked for."""
    bias = fingerprint.bias_key(b"simulated product")
    rng = random.Random(9)
    observed = fingerprint.Observed({rng.randbytes(12): rng.randrange(2) for _ in range(1000)},
                                    bias)
    z = observed.threshold(CHANCE)
    normal = (2 * 1000 * -math.log(CHANCE)) ** 0.5
    assert 0.9 * normal < z < 1.25 * normal
    assert observed.log_chance(z) <= math.log(CHANCE) + 1e-9


def test_positions_needed_for_a_thousand_licenses() -> None:
    assert [fingerprint.positions_needed(CHANCE, c) for c in (1, 2, 3)] == [78, 300, 668]
