"""tree-sitter-luau plumbing shared by the analysis and the transforms."""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter
import tree_sitter_luau

Node = tree_sitter.Node

LANGUAGE = tree_sitter.Language(tree_sitter_luau.language())

# Words a generated name must never be: reserved words, contextual keywords, and `self`,
# which methods declare implicitly.
RESERVED: frozenset[str] = frozenset({
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in",
    "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    "continue", "type", "export", "typeof", "self",
})

# Statement kinds that hold a nested block and run it as a loop body.
LOOPS: frozenset[str] = frozenset({"while_statement", "repeat_statement", "for_statement"})
FUNCTIONS: frozenset[str] = frozenset({"function_declaration", "function_definition"})


def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(LANGUAGE)


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` in source order, without recursion (scripts nest deeply)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def text(node: Node) -> str:
    return (node.text or b"").decode()


def line(node: Node) -> int:
    return node.start_point.row + 1


def code_children(node: Node) -> list[Node]:
    """Named children that are not comments."""
    return [c for c in node.named_children if c.type != "comment"]


def is_local(node: Node) -> bool:
    """A `local function` declaration (its first token is `local`)."""
    return node.child_count > 0 and node.children[0].type == "local"


def first_syntax_error(root: Node) -> Node | None:
    if not root.has_error:
        return None
    for node in walk(root):
        if node.type == "ERROR" or node.is_missing:
            return node
    return root


def is_interpolated(node: Node) -> bool:
    return node.type == "string" and (node.text or b"").startswith(b"`")
