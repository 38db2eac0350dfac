"""A Tardos fingerprinting code (the symmetric version of Škorić et al.) over watermark
positions found in a copy, and its accusation threshold.

Each position `i` (a 12-byte id read off the copy, see `watermark`) has a bias `p_i` drawn
from the arcsine law on [CUTOFF, 1 - CUTOFF], keyed by the server's watermark secret, so no
buyer can compute it. A license's bit at `i` is 1 with probability `p_i`, keyed by the
license secret, so no buyer can compute another buyer's bits. Both are pseudo-random
functions of the position id (AES under a derived key): nothing is stored, and any
position a copy happens to contain has bits for every license.

Scoring a leaked copy's bits `y_i` against a license's bits `x_i`: agreement adds
sqrt((1-p)/p) when both are 1 and sqrt(p/(1-p)) when both are 0; disagreement subtracts the
other. For a license whose copy did not take part, `x_i` is independent of `y_i`, so each
term has mean 0 and variance 1. `threshold` is a Chernoff bound computed on the very
positions and bits read: for any t > 0,

    P(innocent score >= Z) <= exp(sum_i ln E[exp(t U_i)] - t Z),

and the threshold is the least Z (over a grid of t) that makes this at most the chance
allowed. It needs no assumption about how the leaker chose the bits, only that they did not
know the innocent license's bits.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
from collections.abc import Callable, Mapping, Sequence

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

# For tests and tools; a server passes its own secret (compose.py), which keeps the code's
# biases from buyers.
DEFAULT_SECRET = b"licore/watermark/default"
CUTOFF = 0.03  # p stays in [CUTOFF, 1 - CUTOFF]: extreme biases make single terms huge
_EDGE = math.asin(math.sqrt(CUTOFF))
_SPAN = math.pi / 2 - 2 * _EDGE
_TWO64 = float(1 << 64)
_BLOCK = 16
_ID = 12  # bytes of a watermark position id
_ID_PAD = b"\0" * (_BLOCK - _ID)
# What a copy made for one license, untouched, scores per position on average:
# E[2 sqrt(p (1-p))] = E[sin 2θ] for θ uniform on [_EDGE, π/2 - _EDGE].
SINGLE_OWNER_MEAN = 2 * math.cos(2 * _EDGE) / (math.pi - 4 * _EDGE)
_TILTS = tuple(0.002 * 1.25 ** k for k in range(36))  # the t tried by `threshold`


class Keyed:
    """A pseudo-random function from position ids to [0, 2**64), in batches."""

    def __init__(self, key: bytes) -> None:
        # Each block is one position id on its own: AES is used as a pseudo-random
        # function, not to hide a message, so ECB is the mode that fits.
        self._cipher = Cipher(algorithms.AES(key[:32]), modes.ECB())  # noqa: S305

    def units(self, positions: Sequence[bytes]) -> tuple[int, ...]:
        if set(map(len, positions)) <= {_ID}:  # as the watermark makes them: one join
            blob = _ID_PAD.join(positions) + _ID_PAD if positions else b""
        else:
            blob = b"".join(p.ljust(_BLOCK, b"\0")[:_BLOCK] for p in positions)
        encryptor = self._cipher.encryptor()
        out = encryptor.update(blob) + encryptor.finalize()
        return struct.unpack(f">{2 * len(positions)}Q", out)[::2]

    def unit(self, position: bytes) -> int:
        return self.units([position])[0]


def bias_key(watermark_secret: bytes) -> Keyed:
    return Keyed(hmac.new(watermark_secret, b"licore/watermark-bias/v1", hashlib.sha256)
                 .digest())


def bits_key(license_secret: bytes) -> Keyed:
    return Keyed(hmac.new(license_secret, b"licore/watermark-bits/v1", hashlib.sha256)
                 .digest())


def biases(key: Keyed, positions: Sequence[bytes]) -> list[float]:
    return [math.sin(_EDGE + _SPAN * u / _TWO64) ** 2 for u in key.units(positions)]


def code_bits(bias: Keyed, license: Keyed) -> Callable[[Sequence[bytes]], list[int]]:
    """A license's code: its bit at each position, 1 with probability p at that position."""
    def bits(positions: Sequence[bytes]) -> list[int]:
        if not positions:
            return []
        bounds = [int(p * _TWO64) for p in biases(bias, positions)]
        return [1 if u < b else 0
                for u, b in zip(license.units(positions), bounds, strict=True)]
    return bits


def weights(p: float) -> tuple[float, float]:
    """(the term for agreeing on a 1, the term for agreeing on a 0); disagreeing on y = 1
    costs the second, on y = 0 the first."""
    return math.sqrt((1 - p) / p), math.sqrt(p / (1 - p))


class Observed:
    """The bits read off a copy, ready to score licenses against."""

    def __init__(self, read: Mapping[bytes, int], key: Keyed) -> None:
        self.positions = list(read)
        self.biases = biases(key, self.positions)
        self.bounds = [int(p * _TWO64) for p in self.biases]
        self.if_one: list[float] = []  # a license's term where its bit is 1
        self.if_zero: list[float] = []
        for position, p in zip(self.positions, self.biases, strict=True):
            one, zero = weights(p)
            y = read[position]
            self.if_one.append(one if y else -one)
            self.if_zero.append(-zero if y else zero)

    def __len__(self) -> int:
        return len(self.positions)

    def score(self, key: Keyed) -> float:
        if not self.positions:
            return 0.0
        units = key.units(self.positions)
        return sum(a if u < b else c for u, b, a, c
                   in zip(units, self.bounds, self.if_one, self.if_zero, strict=True))

    def threshold(self, chance: float) -> float:
        """The score an innocent license reaches with probability at most `chance` here."""
        return threshold(self.biases, self.if_one, self.if_zero, chance)

    def log_chance(self, score: float) -> float:
        """ln of the Chernoff bound on an innocent license reaching `score` here."""
        return log_chance(self.biases, self.if_one, self.if_zero, score)


def _log_mgf(biases: Sequence[float], if_one: Sequence[float], if_zero: Sequence[float],
             t: float) -> float:
    return sum(math.log(p * math.exp(t * a) + (1 - p) * math.exp(t * b))
               for p, a, b in zip(biases, if_one, if_zero, strict=True))


def threshold(biases: Sequence[float], if_one: Sequence[float], if_zero: Sequence[float],
              chance: float) -> float:
    if not biases:
        return math.inf
    log = math.log(1 / chance)
    return min((_log_mgf(biases, if_one, if_zero, t) + log) / t for t in _TILTS)


def log_chance(biases: Sequence[float], if_one: Sequence[float], if_zero: Sequence[float],
               score: float) -> float:
    if not biases or score <= 0:
        return 0.0
    return min(0.0, min(_log_mgf(biases, if_one, if_zero, t) - t * score for t in _TILTS))


def typical_threshold(positions: int, chance: float) -> float:
    """What `Observed.threshold` gives on `positions` positions of typical biases, half of
    them read as 1: for planning (docs, tests)."""
    ps = [math.sin(_EDGE + _SPAN * (k + 0.5) / positions) ** 2 for k in range(positions)]
    if_one, if_zero = [], []
    for k, p in enumerate(ps):
        one, zero = weights(p)
        if_one.append(one if k % 2 else -one)
        if_zero.append(-zero if k % 2 else zero)
    return threshold(ps, if_one, if_zero, chance)


def positions_needed(chance: float, colluders: int = 1) -> int:
    """The fewest positions at which a copy made by `colluders` buyers is expected to put
    one of them over the threshold (the coalition's total is about the single-owner score,
    shared among them)."""
    low, high = 1, 1
    while positions_expected(high, colluders) < typical_threshold(high, chance):
        low, high = high, high * 2
    while low + 1 < high:
        mid = (low + high) // 2
        if positions_expected(mid, colluders) < typical_threshold(mid, chance):
            low = mid
        else:
            high = mid
    return high


def positions_expected(positions: int, colluders: int) -> float:
    return positions * SINGLE_OWNER_MEAN / colluders


