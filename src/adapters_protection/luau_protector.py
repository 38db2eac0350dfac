"""The protector port over tree-sitter-luau: safety checks and the five transforms.

Transforms run in a fixed order, each on a fresh parse of the previous one's output:
rename_locals, flatten, hoist_constants with encrypt_strings, strip. The output is a
function of (source, rules, license secret) only. A script a rule cannot handle safely is
refused with the script and line named; protect never returns a partly protected copy.
"""

from __future__ import annotations

from collections.abc import Sequence

import tree_sitter

from adapters_protection.analysis import Analysis, analyse
from adapters_protection.minify import strip
from adapters_protection.names import Namer
from adapters_protection.rename import rename_locals
from adapters_protection.strings import StringCipher, in_type, literal_bytes
from adapters_protection.syntax import Node, first_syntax_error, line, parser, text, walk
from licore.protection import (
    TRANSFORMS,
    ProtectionFailed,
    ProtectionProblem,
    ProtectionSettings,
)

IMPLEMENTED: frozenset[str] = TRANSFORMS
# Transforms that need to know which identifier is which variable.
_NEEDS_SCOPES = frozenset({"rename_locals", "flatten", "hoist_constants", "encrypt_strings"})


def _ambiguous_calls(root: Node) -> list[Node]:
    """Calls whose `(` starts a new line: Luau refuses them as ambiguous, tree-sitter not."""
    found = []
    for node in walk(root):
        if node.type != "function_call":
            continue
        callee, args = node.child_by_field_name("name"), node.child_by_field_name("arguments")
        if (callee is not None and args is not None and args.children
                and args.children[0].type == "("
                and args.start_point.row != callee.end_point.row):
            found.append(args)
    return found


class LuauProtector:
    """Pure: output depends only on (source, settings, license_secret)."""

    def __init__(self) -> None:
        self._parser = parser()

    def _parse(self, data: bytes) -> tree_sitter.Tree:
        return self._parser.parse(data)

    def _problems(self, path: str, root: Node, transforms: frozenset[str],
                  analysis: Analysis | None) -> list[ProtectionProblem]:
        error = first_syntax_error(root)
        if error is not None:
            return [ProtectionProblem(path, line(error), "syntax error: the script does not "
                                      "parse, so no rule can be applied to it")]
        problems = [ProtectionProblem(path, line(n), "ambiguous syntax: a call's '(' starts a "
                                      "new line (Luau refuses this; add ';' or join the lines)")
                    for n in _ambiguous_calls(root)]
        if analysis is None:
            return problems
        for node in analysis.unsupported[:1]:
            problems.append(ProtectionProblem(
                path, line(node), f"construct {node.type!r} is not understood by the "
                f"protector, so {', '.join(sorted(transforms & _NEEDS_SCOPES))} cannot be "
                "applied safely"))
        if "rename_locals" in transforms:
            problems += [ProtectionProblem(path, line(n), f"uses {text(n)}: local names are "
                                           "kept as written", blocking=False)
                         for n in analysis.env_users]
        return problems

    def _analyse(self, root: Node, transforms: frozenset[str]) -> Analysis | None:
        if transforms & _NEEDS_SCOPES and not root.has_error:
            return analyse(root)
        return None

    def check(
        self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings
    ) -> list[ProtectionProblem]:
        problems: list[ProtectionProblem] = []
        for path, source in scripts:
            transforms = settings.transforms_for(path)
            if not transforms:
                continue
            root = self._parse(source.encode()).root_node
            problems += self._problems(path, root, transforms, self._analyse(root, transforms))
        return problems

    def protect(
        self, path: str, source: str, settings: ProtectionSettings, license_secret: bytes
    ) -> str:
        transforms = settings.transforms_for(path)
        if not transforms:
            return source
        data = source.encode()
        root = self._parse(data).root_node
        analysis = self._analyse(root, transforms)
        blocking = [p for p in self._problems(path, root, transforms, analysis) if p.blocking]
        if blocking:
            raise ProtectionFailed(blocking)
        namer = Namer(license_secret, path, analysis.names if analysis else ())
        if "rename_locals" in transforms and analysis is not None and not analysis.env_users:
            data = rename_locals(data, analysis, namer)
            root = self._parse(data).root_node
        if "encrypt_strings" in transforms:
            data = self._encrypt(data, root, license_secret, path)
            root = self._parse(data).root_node
        if "strip" in transforms:
            data = strip(data, root)
        root = self._parse(data).root_node
        error = first_syntax_error(root)
        if error is not None:
            raise ProtectionFailed([ProtectionProblem(
                path, line(error), "the protected copy does not parse (a protector fault)")])
        return data.decode()

    def _encrypt(self, data: bytes, root: Node, license_secret: bytes, path: str) -> bytes:
        cipher = StringCipher(license_secret, path)
        out: list[bytes] = []
        pos = 0
        for node in walk(root):
            if node.start_byte < pos:
                continue
            if node.type == "string" and not in_type(node):
                value = literal_bytes(node)
                if value is not None:
                    out.append(data[pos:node.start_byte])
                    out.append(b" " + cipher.encode(value).encode() + b" ")
                    pos = node.end_byte
        out.append(data[pos:])
        return cipher.decoder().encode() + b"".join(out)
