"""A Tardos fingerprinting code (the symmetric version of Škorić et al.) over watermark
positions found in a copy, and its accusation threshold.

Each position `i` (an opaque id read off the copy, see `watermark`) has a bias `p_i` drawn
from the arcsine law on [CUTOFF, 1 - CUTOFF], keyed by the server's watermark secret, so no
buyer can compute it. A license's bit at `i` is 1 with probability `p_i`, keyed by the
license secret, so no buyer can compute another buyer's bits. Both are pseudo-random
functions of the position id: nothing is stored, and any position a copy happens to contain
has bits for every license.

Scoring a leaked copy's bits `y_i` against a license's bits `x_i`: agreement adds
sqrt((1-p)/p) when both are 1 and sqrt(p/(1-p)) when both are 0; disagreement subtracts the
other. For a license whose copy did not take part, `x_i` is independent of `y_i`, so each
term has mean 0 and variance 1 and is at most BOUND in size; Bernstein's inequality
(Freedman's, since the leaker may pick positions after seeing their own copies) then bounds
the chance that an innocent's sum over `m` positions reaches `Z`:

    P(score >= Z) <= exp(-Z^2 / (2 (m + BOUND Z / 3)))

`threshold` solves that for Z given the chance allowed per license.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable, Mapping

# For tests and tools; a server passes its own secret (compose.py), which keeps the code's
# biases from buyers.
DEFAULT_SECRET = b"licore/watermark/default"
CUTOFF = 0.03  # p stays in [CUTOFF, 1 - CUTOFF]: extreme biases make single terms huge
BOUND = math.sqrt((1 - CUTOFF) / CUTOFF)  # the largest a single term can be
_EDGE = math.asin(math.sqrt(CUTOFF))
_SPAN = math.pi / 2 - 2 * _EDGE
_TWO64 = float(1 << 64)
# What a copy made for one license, untouched, scores per position on average:
# E[2 sqrt(p (1-p))] under the cut-off arcsine law.
SINGLE_OWNER_MEAN = 2 * math.cos(2 * _EDGE) / (math.pi - 4 * _EDGE)


def _unit(key: bytes, position: bytes) -> float:
    """A keyed number in [0, 1)."""
    digest = hashlib.blake2b(position, key=key, digest_size=8).digest()
    return int.from_bytes(digest, "big") / _TWO64


def bias_key(watermark_secret: bytes) -> bytes:
    return hmac.new(watermark_secret, b"licore/watermark-bias/v1", hashlib.sha256).digest()


def bits_key(license_secret: bytes) -> bytes:
    return hmac.new(license_secret, b"licore/watermark-bits/v1", hashlib.sha256).digest()


def bias(key: bytes, position: bytes) -> float:
    return math.sin(_EDGE + _SPAN * _unit(key, position)) ** 2


def bit(key: bytes, position: bytes, p: float) -> int:
    """A license's code bit at `position` (key from `bits_key`), 1 with probability `p`."""
    return 1 if _unit(key, position) < p else 0


def weights(p: float) -> tuple[float, float]:
    """(the term for agreeing on a 1, the term for agreeing on a 0); disagreeing on y = 1
    costs the second, on y = 0 the first."""
    return math.sqrt((1 - p) / p), math.sqrt(p / (1 - p))


def score(key: bytes, observed: Mapping[bytes, tuple[int, float]]) -> float:
    """A license's score: `observed` maps each position to (the bit read there, its p)."""
    total = 0.0
    unit = hashlib.blake2b(key=key, digest_size=8)
    for position, (y, p) in observed.items():
        h = unit.copy()
        h.update(position)
        x = 1 if int.from_bytes(h.digest(), "big") / _TWO64 < p else 0
        one, zero = weights(p)
        if y:
            total += one if x else -zero
        else:
            total += zero if not x else -one
    return total


def threshold(positions: int, chance: float) -> float:
    """The score an innocent license reaches with probability at most `chance`, over
    `positions` positions (Bernstein's bound solved for Z)."""
    if positions <= 0:
        return math.inf
    log = math.log(1 / chance)
    a = 2 * log * BOUND / 3
    return (a + math.sqrt(a * a + 8 * log * positions)) / 2


def innocent_bound(positions: int, z: float) -> float:
    """The chance bound of `threshold` read the other way: P(innocent score >= z)."""
    if positions <= 0 or z <= 0:
        return 1.0
    return min(1.0, math.exp(-z * z / (2 * (positions + BOUND * z / 3))))


def expected_single_owner(positions: int) -> float:
    return positions * SINGLE_OWNER_MEAN


def positions_needed(chance: float, colluders: int = 1) -> int:
    """The fewest positions at which a copy made by `colluders` buyers is expected to put
    one of them over the threshold (a coalition's total is at least the single-owner
    score, shared among them)."""
    m = 1
    while expected_single_owner(m) / colluders < threshold(m, chance):
        m *= 2
    low, high = m // 2, m
    while low + 1 < high:
        mid = (low + high) // 2
        if expected_single_owner(mid) / colluders < threshold(mid, chance):
            low = mid
        else:
            high = mid
    return high


def scores(keys: Iterable[tuple[str, bytes]],
           observed: Mapping[bytes, tuple[int, float]]) -> dict[str, float]:
    return {name: score(key, observed) for name, key in keys}
