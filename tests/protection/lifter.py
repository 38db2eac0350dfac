"""A buyer's lifter: a decrypted sealed program turned back into Luau, written from the
SDK's reader (`sdk/luau/src/SealedVM.luau`) the way a licensed buyer who recorded their own
`/unlock` key would write one, for the attack tests and the benchmark.

It prints every variable under a fresh name (`v1`, `v2`, ... in the order they are declared),
every binary expression in parentheses, and, with `canonical`, what a canonicaliser would
make of the program: commutative operands in one order, comparisons as `<`/`<=` only,
`if not c then a else b end` as `if c then b else a end`, numbers in one form. It is the
attacker's tool, not licore's: nothing in `src/` uses it."""

from __future__ import annotations

import math
from collections.abc import Callable

from adapters_protection.seal_compiler import FIRST_SLOT, TAGS

_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "idiv": "//", "mod": "%",
           "pow": "^", "concat": "..", "eq": "==", "ne": "~=", "lt": "<", "le": "<=",
           "gt": ">", "ge": ">=", "and": "and", "or": "or"}
_UNARY = {"unm": "-", "not": "not ", "len": "#"}
_COMMUTATIVE = frozenset({"add", "mul", "eq", "ne"})
_MIRRORED = {"gt": "lt", "ge": "le"}


class _Reader:
    def __init__(self, program: bytes) -> None:
        self.data, self.at = program, 0
        self.tags: dict[int, str] = {}
        self.key = b""

    def int(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def tag(self) -> str:
        return self.tags[self.int()]

    def bytes(self) -> bytes:
        n = self.int()
        raw = self.data[self.at:self.at + n]
        self.at += n
        return bytes(b ^ self.key[(i + n) % 32] for i, b in enumerate(raw))


def _quoted(value: bytes) -> str:
    return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\' else f"\\{b}"
                         for b in value) + '"'


def _number(text: bytes) -> str:
    value = float(text)
    if math.isinf(value):
        return "math.huge" if value > 0 else "-math.huge"
    if value == int(value) and abs(value) < 2 ** 53 and not (value == 0 and math.copysign(
            1, value) < 0):
        return str(int(value))
    return repr(value)


class _Fn:
    def __init__(self, parent: _Fn | None, upvalues: list[str]) -> None:
        self.parent, self.upvalues = parent, upvalues
        self.slots: dict[int, str] = {}


class Lifter:
    def __init__(self, program: bytes, *, canonical: bool = False) -> None:
        self.r = _Reader(program)
        self.canonical = canonical
        self.names = 0
        self.fn: _Fn | None = None

    def lift(self) -> str:
        r = self.r
        r.int()  # format
        count = r.int()
        numbers = [r.int() for _ in range(count)]
        r.tags = {n: TAGS[i] for i, n in enumerate(numbers)}
        r.key = r.data[r.at + 1:r.at + 1 + r.int()]
        r.at += len(r.key)
        entries = r.int()
        out = []
        for i in range(1, entries + 1):
            outer = _Fn(None, [])
            self.fn = outer
            out.append(f"local sealed{i} = {self.function(captures=True)}")
        return "\n".join(out) + "\n"

    def _name(self) -> str:
        self.names += 1
        return f"v{self.names}"

    def _declare(self, code: int) -> str:
        assert self.fn is not None
        name = self._name()
        self.fn.slots[code // 2] = name
        return name

    def function(self, *, captures: bool = False) -> str:
        r = self.r
        params, vararg, boxed = r.int(), r.int(), r.int()
        for _ in range(boxed):
            r.int()
        r.int()  # frame size
        sources = [r.int() for _ in range(r.int())]
        parent = self.fn
        assert parent is not None
        upvalues = []
        for source in sources:
            n, from_slot = source // 2, source % 2
            if from_slot:
                upvalues.append(parent.slots.get(n, f"slot{n}"))
            elif captures:
                upvalues.append(f"capture{n}")
            else:
                upvalues.append(parent.upvalues[n - 1])
        fn = _Fn(parent, upvalues)
        self.fn = fn
        names = [self._declare((FIRST_SLOT + i) * 2) for i in range(params)]
        if vararg:
            names.append("...")
        body = self.block()
        self.fn = parent
        return f"function({', '.join(names)})\n{body}end"

    def block(self) -> str:
        lines = []
        for _ in range(self.r.int()):
            self.r.int()  # line
            lines.append(self.statement())
        return "".join(line + "\n" for line in lines)

    def exprs(self, n: int | None = None) -> list[str]:
        return [self.expr() for _ in range(self.r.int() if n is None else n)]

    def target(self) -> str:
        tag = self.r.tag()
        if tag == "tindex":
            return self._index(self.expr(), self.expr())
        return self._variable({"tlocal": "local", "tboxed": "boxed", "tupval": "upval"}[tag],
                              self.r.int())

    def statement(self) -> str:
        tag, r = self.r.tag(), self.r
        handlers: dict[str, Callable[[], str]] = {
            "slocal": self._local, "slocalfunc": self._local_function,
            "sassign": lambda: self._assign(r.int()),
            "scompound": self._compound, "scall": self.expr,
            "sdo": lambda: f"do\n{self.block()}end",
            "swhile": lambda: f"while {self.expr()} do\n{self.block()}end",
            "srepeat": lambda: f"repeat\n{self.block()}until {self.expr()}",
            "sif": self._if, "sfornum": self._fornum, "sforin": self._forin,
            "sreturn": lambda: (r.int(), "return " + ", ".join(self.exprs()))[1],
            "sbreak": lambda: "break", "scontinue": lambda: "continue",
        }
        return handlers[tag]()

    def _local(self) -> str:
        values = self.exprs()
        names = [self._declare(self.r.int()) for _ in range(self.r.int())]
        return f"local {', '.join(names)}" + (f" = {', '.join(values)}" if values else "")

    def _local_function(self) -> str:
        name = self._declare(self.r.int())
        return f"local {name} = {self.function()}"

    def _assign(self, n: int) -> str:
        targets = [self.target() for _ in range(n)]
        return f"{', '.join(targets)} = {', '.join(self.exprs())}"

    def _compound(self) -> str:
        operator = _BINARY[self.r.tag()]
        target = self.target()
        return f"{target} {operator}= {self.expr()}"

    def _if(self) -> str:
        branches = [(self.expr(), self.block()) for _ in range(self.r.int())]
        other = self.block() if self.r.int() else None
        if self.canonical and len(branches) == 1 and other is not None and branches[0][
                0].startswith("(not "):
            condition, then = branches[0]
            branches, other = [(condition[5:-1], other)], then
        text = "".join(f"{'if' if i == 0 else 'elseif'} {c} then\n{b}"
                       for i, (c, b) in enumerate(branches))
        return text + (f"else\n{other}" if other is not None else "") + "end"

    def _fornum(self) -> str:
        bounds = self.exprs()
        name = self._declare(self.r.int())
        return f"for {name} = {', '.join(bounds)} do\n{self.block()}end"

    def _forin(self) -> str:
        values = self.exprs()
        names = [self._declare(self.r.int()) for _ in range(self.r.int())]
        return f"for {', '.join(names)} in {', '.join(values)} do\n{self.block()}end"

    def _variable(self, kind: str, n: int) -> str:
        assert self.fn is not None
        if kind == "upval":
            return self.fn.upvalues[n - 1] + ("[1]" if False else "")
        return self.fn.slots.get(n, f"slot{n}")

    @staticmethod
    def _index(table: str, key: str) -> str:
        if key.startswith('"') and key[1:-1].isidentifier() and "\\" not in key:
            return f"{table}.{key[1:-1]}"
        return f"{table}[{key}]"

    def expr(self) -> str:
        r = self.r
        tag = r.tag()
        if tag in ("nil", "true", "false"):
            return tag
        if tag == "num":
            return _number(r.bytes())
        if tag == "str":
            return _quoted(r.bytes())
        if tag in ("vararg1", "varargm"):
            return "..."
        if tag in ("local", "boxed", "upval"):
            return self._variable(tag, r.int())
        if tag == "index":
            return self._index(self.expr(), self.expr())
        if tag == "indexk":
            return self._index(self.expr(), _quoted(r.bytes()))
        if tag in ("call1", "callm"):
            callee = self.expr()
            return f"{callee}({', '.join(self.exprs())})"
        if tag in ("method1", "methodm"):
            obj, method = self.expr(), r.bytes().decode()
            return f"{obj}:{method}({', '.join(self.exprs())})"
        if tag in ("errcall1", "errcallm"):
            r.int()
            callee = self.expr()
            return f"{callee}({', '.join(self.exprs())})"
        if tag == "func":
            return self.function()
        if tag in _BINARY:
            return self._binary(tag)
        if tag in _UNARY:
            return f"({_UNARY[tag]}{self.expr()})"
        if tag == "table":
            fields = []
            for _ in range(r.int()):
                if r.int() == 0:
                    fields.append(self.expr())
                else:
                    fields.append(f"[{self.expr()}] = {self.expr()}")
            return "{" + ", ".join(fields) + "}"
        if tag == "ifx":
            clauses = [(self.expr(), self.expr()) for _ in range(r.int())]
            other = self.expr()
            return "(" + " ".join(f"{'if' if i == 0 else 'elseif'} {c} then {v}"
                                  for i, (c, v) in enumerate(clauses)) + f" else {other})"
        if tag == "interp":
            n = r.int()
            pieces = [r.bytes().decode(errors="replace")]
            values = []
            for _ in range(n):
                values.append(self.expr())
                pieces.append(r.bytes().decode(errors="replace"))
            return "`" + "".join(p.replace("`", "\\`").replace("{", "\\{") + (
                f"{{{values[i]}}}" if i < n else "") for i, p in enumerate(pieces)) + "`"
        raise ValueError(f"unknown node {tag}")

    def _binary(self, tag: str) -> str:
        left, right = self.expr(), self.expr()
        if self.canonical:
            if tag in _MIRRORED:
                tag, left, right = _MIRRORED[tag], right, left
            if tag in _COMMUTATIVE and right < left:
                left, right = right, left
        return f"({left} {_BINARY[tag]} {right})"


def lift(program: bytes, *, canonical: bool = False) -> str:
    return Lifter(program, canonical=canonical).lift()
