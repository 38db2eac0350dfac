"""A Hypothesis strategy for random, well-formed, terminating Luau programs.

Programs draw on a small pool of names so that shadowing, upvalues and re-declaration
happen often. Every variable has a known type (number, string or function), so most
programs run to the end; the ones that fail (a number formatted as a string, a division
producing nan) fail the same way before and after protection, which is also checked.
Loops are bounded by counters nothing else writes, and functions only call functions
declared before them, so every program terminates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

NAMES = ("a", "b", "c", "x", "y", "n", "s", "t")
FUNCTIONS = ("f", "g", "h", "k")
TEXT = "ab Z09_\"'\\\n\t]=[{}`é漢\0"
NUM, STR = "num", "str"

Draw = Callable[[st.SearchStrategy[Any]], Any]


def _quoted(value: str, draw: Draw) -> str:
    out = []
    for ch in value:
        style = draw(st.integers(0, 3))
        code = ord(ch)
        if ch in "\"\\\n\0" or (style == 1 and code < 128):
            out.append(f"\\{code:03d}" if code < 256 and style != 2 else f"\\u{{{code:X}}}")
        elif style == 2 and code < 128:
            out.append(f"\\x{code:02X}")
        elif style == 3 and code < 128:
            out.append(f"\\u{{{code:x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _long(value: str) -> str:
    level = 0
    while f"]{'=' * level}]" in value + "]":
        level += 1
    eq = "=" * level
    return f"[{eq}[{value}]{eq}]"


class _Program:
    def __init__(self, draw: Draw) -> None:
        self.draw = draw
        self.scopes: list[dict[str, str]] = [{}]
        self.counters = 0
        self.loop_depth = 0  # loops of the current function only

    # scopes ------------------------------------------------------------------------------

    def visible(self, kind: str) -> list[str]:
        seen: dict[str, str] = {}
        for scope in self.scopes:
            seen.update(scope)
        return sorted(name for name, k in seen.items() if k == kind)

    def functions(self) -> list[tuple[str, int]]:
        seen: dict[str, str] = {}
        for scope in self.scopes:
            seen.update(scope)
        return sorted((n, int(k[3:])) for n, k in seen.items() if k.startswith("fn:"))

    def choice(self, options: list[Any] | tuple[Any, ...]) -> Any:
        return self.draw(st.sampled_from(options))

    # expressions -------------------------------------------------------------------------

    def number(self, depth: int) -> str:
        options = ["literal", "literal"]
        if self.visible(NUM):
            options += ["var", "var"]
        if depth > 0:
            options += ["binary", "binary", "unary", "length", "if", "call", "paren"]
        kind = self.choice(options)
        if kind == "literal":
            value = self.draw(st.one_of(st.integers(-50, 1000),
                                        st.sampled_from(["0x1F", "1_000", "0b101", "2.5",
                                                         "1e3", ".5", "3"])))
            return str(value)
        if kind == "var":
            return str(self.choice(self.visible(NUM)))
        if kind == "binary":
            op = self.choice(["+", "-", "*", "//", "%", "/", "^"])
            right = self.number(depth - 1)
            if op == "^":
                right = str(self.draw(st.integers(0, 3)))
            return f"{self.number(depth - 1)} {op} {right}"
        if kind == "unary":
            return f"-({self.number(depth - 1)})"
        if kind == "length":
            return f"#({self.string(depth - 1)})"
        if kind == "if":
            return (f"(if {self.boolean(depth - 1)} then {self.number(depth - 1)} "
                    f"else {self.number(depth - 1)})")
        if kind == "call":
            fns = self.functions()
            if not fns:
                return self.number(0)
            name, arity = self.choice(fns)
            args = ", ".join(self.number(depth - 1) for _ in range(arity))
            return f"{name}({args})"
        return f"({self.number(depth - 1)})"

    def string(self, depth: int) -> str:
        options = ["literal", "literal"]
        if self.visible(STR):
            options += ["var", "var"]
        if depth > 0:
            options += ["concat", "tostring", "interp", "method"]
        kind = self.choice(options)
        if kind == "literal":
            value = self.draw(st.text(alphabet=TEXT, max_size=8))
            if self.draw(st.booleans()) and not value.startswith("\n") and "\0" not in value:
                return _long(value)
            return _quoted(value, self.draw)
        if kind == "var":
            return str(self.choice(self.visible(STR)))
        if kind == "concat":
            return f"{self.string(depth - 1)} .. {self.string(depth - 1)}"
        if kind == "tostring":
            return f"tostring({self.number(depth - 1)})"
        if kind == "interp":
            head = self.draw(st.text(alphabet="ab {}`\\", max_size=4))
            escaped = "".join("\\" + c if c in "{}`\\" else c for c in head)
            return f"`{escaped}{{{self.number(depth - 1)}}}{{{self.string(depth - 1)}}}`"
        return f"({self.string(depth - 1)}):upper()"

    def boolean(self, depth: int) -> str:
        kind = self.choice(["compare", "equal", "not", "logic"] if depth > 0 else ["compare"])
        if kind == "compare":
            op = self.choice(["<", "<=", ">", ">=", "==", "~="])
            return f"{self.number(max(depth - 1, 0))} {op} {self.number(max(depth - 1, 0))}"
        if kind == "equal":
            return f"{self.string(depth - 1)} == {self.string(depth - 1)}"
        if kind == "not":
            return f"not ({self.boolean(depth - 1)})"
        op = self.choice(["and", "or"])
        return f"({self.boolean(depth - 1)}) {op} ({self.boolean(depth - 1)})"

    # statements --------------------------------------------------------------------------

    def block(self, depth: int, size: int) -> list[str]:
        self.scopes.append({})
        try:
            return [line for _ in range(size) for line in self.statement(depth)]
        finally:
            self.scopes.pop()

    def statement(self, depth: int) -> list[str]:
        options = ["local", "local", "print", "assign"]
        if depth > 0:
            options += ["do", "if", "for", "while", "repeat", "function", "closure", "ipairs"]
        if self.loop_depth:
            options += ["skip"]
        kind = self.choice(options)
        d = depth - 1
        if kind == "local":
            name = self.choice(NAMES)
            typ = self.choice([NUM, STR])
            value = self.number(2) if typ == NUM else self.string(2)
            self.scopes[-1][name] = typ
            return [f"local {name} = {value}"]
        if kind == "print":
            return [f"print({self.number(2)}, {self.string(2)}, {self.boolean(1)})"]
        if kind == "assign":
            nums = self.visible(NUM)
            if nums and self.draw(st.booleans()):
                op = self.choice(["=", "+=", "-=", "*="])
                return [f"{self.choice(nums)} {op} {self.number(2)}"]
            strs = self.visible(STR)
            if strs:
                op = self.choice(["=", "..="])
                return [f"{self.choice(strs)} {op} {self.string(2)}"]
            return [f"print({self.number(1)})"]
        if kind == "do":
            return ["do", *self.block(d, self.draw(st.integers(1, 3))), "end"]
        if kind == "if":
            lines = [f"if {self.boolean(2)} then", *self.block(d, self.draw(st.integers(1, 2)))]
            if self.draw(st.booleans()):
                lines += [f"elseif {self.boolean(2)} then", *self.block(d, 1)]
            if self.draw(st.booleans()):
                lines += ["else", *self.block(d, 1)]
            return [*lines, "end"]
        if kind in ("for", "while", "repeat", "ipairs"):
            return self.loop(kind, d)
        if kind == "skip":
            return [f"if {self.boolean(1)} then {self.choice(['break', 'continue'])} end"]
        return self.function(kind, d)

    def loop(self, kind: str, depth: int) -> list[str]:
        self.loop_depth += 1
        try:
            if kind == "for":
                var = self.choice(NAMES)
                start, stop = self.draw(st.integers(-2, 2)), self.draw(st.integers(0, 4))
                head = f"for {var} = {start}, {stop}"
                self.scopes.append({var: NUM})
                try:
                    return [f"{head} do", *self.block(depth, self.draw(st.integers(1, 3))), "end"]
                finally:
                    self.scopes.pop()
            if kind == "ipairs":
                key, value = self.choice(NAMES), self.choice(NAMES)
                items = ", ".join(self.number(1) for _ in range(self.draw(st.integers(0, 3))))
                self.scopes.append({key: NUM, value: NUM})
                try:
                    return [f"for {key}, {value} in ipairs({{{items}}}) do",
                            *self.block(depth, self.draw(st.integers(1, 2))), "end"]
                finally:
                    self.scopes.pop()
            self.counters += 1
            counter = f"i{self.counters}"
            bound = self.draw(st.integers(0, 3))
            body = self.block(depth, self.draw(st.integers(1, 3)))
            if kind == "while":
                return [f"local {counter} = 0", f"while {counter} < {bound} do",
                        f"{counter} += 1", *body, "end"]
            return [f"local {counter} = 0", "repeat", f"{counter} += 1", *body,
                    f"until {counter} >= {bound}"]
        finally:
            self.loop_depth -= 1

    def function(self, kind: str, depth: int) -> list[str]:
        name = self.choice(FUNCTIONS)
        params = list(dict.fromkeys(self.draw(st.lists(st.sampled_from(NAMES), max_size=3))))
        varargs = self.draw(st.booleans())
        signature = ", ".join([*params, *(["..."] if varargs else [])])
        outer_loops, self.loop_depth = self.loop_depth, 0
        # Not callable from its own body: no recursion, so every program terminates.
        self.scopes[-1][name] = "pending"
        self.scopes.append(dict.fromkeys(params, NUM))
        try:
            body = self.block(depth, self.draw(st.integers(1, 3)))
            result = self.number(2)
            if varargs:
                result = f"{result} + select('#', ...)"
        finally:
            self.scopes.pop()
            self.loop_depth = outer_loops
        self.scopes[-1][name] = f"fn:{len(params)}"
        if kind == "closure":
            return [f"local {name}", f"{name} = function({signature})", *body,
                    f"return {result}", "end"]
        return [f"local function {name}({signature})", *body, f"return {result}", "end"]


@st.composite
def programs(draw: Draw) -> str:
    program = _Program(draw)
    lines = [line for _ in range(draw(st.integers(1, 6))) for line in program.statement(3)]
    names = program.visible(NUM) + program.visible(STR)
    lines.append(f"print({', '.join(names) or '0'})")
    return "\n".join(lines) + "\n"
