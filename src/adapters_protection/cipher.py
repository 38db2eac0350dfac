"""The per-license literal cipher of `encrypt_strings`, and its Luau decoder.

Each literal is enciphered under a keystream of its own: a linear congruential generator
whose starting state is computed from the literal's own key (a number per use, in an
order drawn per license and script, written where the literal is used) and constants
derived from the license secret, which live only in the decoder: reading a literal means
running (or re-implementing, per license) the decoder on that use's key and ciphertext. Each
character's key also depends on the previous plain character (autokey), so a repeated
character does not encipher to a repeated character.

Printable ASCII is rotated within the printable range, so an encrypted literal is about as
long as the original (escapes only for `"` and `\\`); other bytes (control characters,
UTF-8 bytes) pass through, which hides nothing worth hiding: keys, URLs and messages are
printable.

The decoder decodes a literal the first time its use site runs, and caches it under its
key; there is no table of ciphertexts, so nothing reachable at run time can hand out a
literal whose use site has not run. It calls no library
function while decoding: characters come from a table of the 256 one-byte strings built
when the script starts, and are joined with `..`, so a hook on `string.char`,
`table.concat` or any other library function never sees a plain literal; `string.byte`
sees only ciphertext. All arithmetic stays below 2^53, so it is exact in Luau's doubles.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import random
import re
import string

import attrs

from adapters_protection.strings import BadEscape, decode_quoted

_FIRST, _COUNT = 32, 95  # printable ASCII, " " to "~"
_PIECE = 64  # longer literals are decoded in pieces
_LETTERS = string.ascii_letters


@attrs.frozen
class CipherParameters:
    """The constants of one license's keystream (all chosen from the license secret)."""

    modulus: int  # 2^20 .. 2^24
    multiplier: int  # < 2^20, so state * multiplier < 2^44
    increment: int
    nonce_multiplier: int  # < 2^20, nonces < 2^24
    nonce_offset: int
    shift: int  # keystream byte = state // shift
    autokey: int  # 1..94: weight of the previous plain character
    shape: int  # how the decoder is written: its names, and each constant as a sum or product

    @classmethod
    def of(cls, license_secret: bytes) -> CipherParameters:
        seed = hmac.new(license_secret, b"licore/literal-cipher/v2", hashlib.sha256).digest()

        def number(i: int, bits: int) -> int:
            return int.from_bytes(seed[i:i + 4], "big") % (1 << bits)

        modulus = 1 << (20 + seed[0] % 5)
        return cls(
            modulus=modulus,
            multiplier=(number(1, 18) | 1) * 4 + 1,  # = 1 (mod 4): the full period
            increment=number(5, 24) % modulus | 1,
            nonce_multiplier=number(9, 19) * 2 + 1,
            nonce_offset=number(13, 24) % modulus,
            shift=1 << (3 + seed[17] % 6),
            autokey=1 + seed[18] % (_COUNT - 1),
            shape=int.from_bytes(seed[19:27], "big"),
        )

    def _start(self, nonce: int) -> int:
        return (nonce * self.nonce_multiplier + self.nonce_offset) % self.modulus

    def encipher(self, value: bytes, nonce: int) -> bytes:
        state, prev, out = self._start(nonce), 0, bytearray()
        for b in value:
            state = (state * self.multiplier + self.increment) % self.modulus
            if _FIRST <= b < _FIRST + _COUNT:
                offset = b - _FIRST
                out.append(_FIRST + (offset + state // self.shift + self.autokey * prev)
                           % _COUNT)
                prev = offset
            else:
                out.append(b)
        return bytes(out)

    def decipher(self, value: bytes, nonce: int) -> bytes:
        state, prev, out = self._start(nonce), 0, bytearray()
        for c in value:
            state = (state * self.multiplier + self.increment) % self.modulus
            if _FIRST <= c < _FIRST + _COUNT:
                prev = (c - _FIRST - state // self.shift - self.autokey * prev) % _COUNT
                out.append(_FIRST + prev)
            else:
                out.append(c)
        return bytes(out)

    def decoder(self, longest: int, keys: int) -> str:
        """An expression for the literals' table, for literals of at most `longest` bytes
        under keys 1 to `keys`: a table holding, at 0, the decoder
        `function(key, ciphertext)`, which deciphers one literal under its own key, stores
        it at that key and returns it; the table holds no other literal until its use site
        has run (`(L[k]or L[0](k,"..."))`). Nothing here
        knows any ciphertext or key: those are written where each literal is used.

        Written differently per license: its single-letter names (it holds no other code,
        so they shadow nothing), the order of its terms, and each constant, which appears
        only as a little sum, difference or product. Reading the constants takes evaluating
        Luau expressions, not matching a pattern."""
        # Only the table's size differs between one license's scripts, so the rest is
        # written once per license and kind (a product's many scripts each paid for it).
        before, after = _decoder_around_size(self, longest > _PIECE)
        return f"{before}{keys}{after}"

    def _decoder(self, long: bool) -> str:
        """The decoder's text with NUL where its table's size goes (see `decoder`)."""
        keys = "\0"
        shape = random.Random(self.shape)  # a layout, keyed like the rest; not a secret
        (b, c, h, m, s, n, v, t, p, r, x, o, j, k, i) = shape.sample(_LETTERS, 15)

        def const(value: int) -> str:
            form = shape.randrange(3)
            if form == 0:
                low = shape.randrange(value + 1)
                return f"({low}+{value - low})"
            if form == 1:
                factor = shape.randrange(2, 4096)
                return f"({value // factor}*{factor}+{value % factor})"
            extra = shape.randrange(1, 1 << 20)
            return f"({value + extra}-{extra})"

        def step(state: str, a: int, b_: int) -> str:
            forms = [f"{state}*{const(a)}+{const(b_)}", f"{const(b_)}+{const(a)}*{state}",
                     f"{const(a)}*{state}+{const(b_)}"]
            return f"({shape.choice(forms)})%{const(self.modulus)}"

        terms = ["32", f"{t}//{const(self.shift)}", f"{const(self.autokey)}*{p}"]
        shape.shuffle(terms)
        head = (f"(function({b},{c})local {h},{m}={{}},table.create({keys})"
                f"for {i}=0,255 do {h}[{i}]={c}({i})end {m}[0]=function({n},{s})"
                f"local {t},{p},{r}={step(n, self.nonce_multiplier, self.nonce_offset)},0,'' "
                f"for {i}=1,#{s} do {t}={step(t, self.multiplier, self.increment)} "
                f"local {x}={b}({s},{i})if {x}>31 and {x}<127 then "
                f"{p}=({x}-{'-'.join(terms)})%95 {x}={p}+32 end {r}={r}..{h}[{x}]")
        tail = f"{m}[{n}]={v} return {v} end return {m} end)(string.byte,string.char)"
        if not long:
            return f"{head} end local {v}={r} {tail}"
        # Long literals: pieces of 64 characters, joined pairwise (linear, not quadratic).
        return (f"{head} if#{r}>{_PIECE - 1} then {j}={j}+1 {o}[{j}]={r} {r}=''end end "
                f"{j}={j}+1 {o}[{j}]={r} while {j}>1 do local {k}=0 for {i}=1,{j},2 do "
                f"{k}={k}+1 {o}[{k}]={i}<{j} and {o}[{i}]..{o}[{i}+1]or {o}[{i}]end {j}={k} end "
                f"local {v}={o}[1]{tail}").replace(f"local {t},{p},{r}=",
                                                   f"local {o},{j}={{}},0 local {t},{p},{r}=")


@functools.lru_cache(maxsize=64)
def _decoder_around_size(params: CipherParameters, long: bool) -> tuple[str, str]:
    before, _, after = params._decoder(long).partition("\0")
    return before, after


# What a literal's use site looks like in a copy, for a holder of the secret (the tracer):
# the decoder's call, its key (an integer the watermark may write in any of its forms) and
# the ciphertext.
_USE = re.compile(r'\(\s*(0[xX][0-9a-fA-F]+|[0-9]+)\s*,\s*"((?:[^"\\\n]|\\.|\\\n)*)"\s*\)',
                  re.DOTALL)


def readable_literals(text: str, license_secret: bytes) -> list[tuple[bytes, int]]:
    """Every literal an `encrypt_strings` copy for this license holds, deciphered, with
    the offset where it is written: each ciphertext at its use site, under the key written
    beside it. Only someone holding the license secret can do this; the copy alone does
    not say how."""
    params = CipherParameters.of(license_secret)
    out: list[tuple[bytes, int]] = []
    for use in _USE.finditer(text):
        number = use.group(1)
        key = int(number, 16) if number[:2] in ("0x", "0X") else int(number)
        with contextlib.suppress(BadEscape):  # not a string this protector wrote
            out.append((params.decipher(decode_quoted(use.group(2)), key), use.start(2)))
    return out
