"""The protector port over tree-sitter-luau: safety checks and the `strip` transform.

Only `strip` (comments and whitespace) and `encrypt_strings` are implemented so far; other
transforms are refused by `check` and left untouched by `protect`, so output stays
equivalent to the input.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import tree_sitter
import tree_sitter_luau

from adapters_protection.strings import StringCipher, in_type, literal_bytes
from licore.protection import ProtectionProblem, ProtectionSettings

IMPLEMENTED: frozenset[str] = frozenset({"strip", "encrypt_strings"})
_ENV_FUNCTIONS = {b"getfenv", b"setfenv"}


def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_luau.language()))


# Nodes whose text is taken whole: whitespace inside a string is part of its value.
_ATOMIC = {"string", "interpolated_string", "comment"}


def _tokens(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in _ATOMIC or current.child_count == 0:
            if current.end_byte > current.start_byte:
                yield current
            continue
        stack.extend(reversed(current.children))


def collapse_whitespace(data: bytes, root: tree_sitter.Node) -> bytes:
    """Drop comments and indentation; between two tokens keep one newline where there was
    one (a newline can matter, as before a `(` that would otherwise call the line above),
    one space where there was any gap, and nothing where the tokens touched."""
    out: list[bytes] = []
    pos = 0
    pending = b""
    for token in _tokens(root):
        gap = data[pos:token.start_byte]
        pos = token.end_byte
        if token.type == "comment":
            newline = b"\n" in gap or data[token.start_byte:token.end_byte].endswith(b"\n")
            pending = b"\n" if newline or pending == b"\n" else b" "
            continue
        if b"\n" in gap or pending == b"\n":
            sep = b"\n"
        elif gap or pending:
            sep = b" "
        else:
            sep = b""
        pending = b""
        if out:
            out.append(sep)
        out.append(data[token.start_byte:token.end_byte])
    return b"".join(out) + b"\n"


def _walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


class LuauProtector:
    """Pure: output depends only on (source, settings, license_secret)."""

    def __init__(self) -> None:
        self._parser = _parser()

    def check(
        self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings
    ) -> list[ProtectionProblem]:
        problems: list[ProtectionProblem] = []
        for path, source in scripts:
            transforms = settings.transforms_for(path)
            if not transforms:
                continue
            root = self._parser.parse(source.encode()).root_node
            for node in _walk(root):
                line = node.start_point.row + 1
                if node.type == "ERROR" or node.is_missing:
                    problems.append(ProtectionProblem(path, line, "syntax error"))
                    break
                if node.type == "identifier" and node.text in _ENV_FUNCTIONS:
                    problems.append(ProtectionProblem(
                        path, line, "uses getfenv/setfenv: names are kept as written"))
            for name in sorted(transforms - IMPLEMENTED):
                problems.append(ProtectionProblem(path, 0, f"transform {name!r} not available"))
        return problems

    def protect(
        self, path: str, source: str, settings: ProtectionSettings, license_secret: bytes
    ) -> str:
        transforms = settings.transforms_for(path)
        data = source.encode()
        root = self._parser.parse(data).root_node
        if not transforms & IMPLEMENTED or root.has_error:
            return source
        cipher = StringCipher(license_secret, path)
        encrypt = "encrypt_strings" in transforms
        out: list[bytes] = []
        pos = 0
        for node in _walk(root):
            if node.start_byte < pos:
                continue
            replacement: bytes | None = None
            if node.type == "comment" and "strip" in transforms:
                # A space keeps the tokens on either side apart.
                replacement = b" "
            elif node.type == "string" and encrypt and not in_type(node):
                value = literal_bytes(node)
                if value is not None:
                    replacement = b" " + cipher.encode(value).encode() + b" "
            if replacement is not None:
                out.append(data[pos:node.start_byte])
                out.append(replacement)
                pos = node.end_byte
        out.append(data[pos:])
        body = b"".join(out).decode()
        text = cipher.decoder() + body if encrypt else body
        if "strip" in transforms:
            encoded = text.encode()
            tree = self._parser.parse(encoded)
            if not tree.root_node.has_error:
                text = collapse_whitespace(encoded, tree.root_node).decode()
        return text
