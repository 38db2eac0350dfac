"""Sealing: functions marked `--@sealed` become stubs over an encrypted program.

The program (`seal_compiler`) of every sealed function of a script, compiled from the
functions in the shapes the license's code bits ask for (`shape`), is encrypted with the
spec's sealing scheme (section 5) under the sealed-code key of the license, version and key
generation, which the server hands out only inside `/unlock`
(`licore.sealing.sealed_code_key`). The copy keeps the ciphertext and, for each function, a
stub that on its first call asks the SDK's door (`shared.LicoreSealed.entry`) to unlock,
decrypt and compile the program, then calls the real function. Without a live license the
SDK has no key, so the stub raises `licore: sealed code needs a live license` and nothing of
the function runs.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import re
from collections.abc import Iterable, Sequence

import attrs

from adapters_protection import fingerprint, shape
from adapters_protection.analysis import Analysis, analyse
from adapters_protection.edits import Edit, apply, prelude_offset
from adapters_protection.seal_compiler import Capture, Encoding, SealError, compile_functions
from adapters_protection.syntax import Node, is_local, parser, text, walk
from licore.bounds import SEALED_FOR
from licore.protection import Candidate
from licore.sealing import SealError as SealingError
from licore.sealing import open_sealed, seal, sealed_code_key

ANNOTATIONS = (b"--@sealed", b"--!sealed")
# Globals a sealed function may read once, when its stub is made, when the script never
# assigns them: the standard library and Roblox's built-in services and types.
_STANDARD = frozenset({
    "math", "string", "table", "coroutine", "bit32", "buffer", "utf8", "os", "debug",
    "print", "warn", "type", "typeof", "tostring", "tonumber", "pairs", "ipairs", "next",
    "select", "error", "assert", "pcall", "xpcall", "rawget", "rawset", "rawequal", "rawlen",
    "setmetatable", "getmetatable", "unpack", "game", "workspace", "Instance", "Vector3",
    "Vector2", "CFrame", "Color3", "UDim2", "UDim", "Enum", "task", "tick", "time", "require",
    "script", "newproxy", "gcinfo", "collectgarbage", "shared", "_G",
})
_LOADER_NAME = "__licoreSealed"


@attrs.frozen
class Marked:
    node: Node  # the function_declaration
    method: bool


def _sealed_script(root: Node) -> bool:
    """A `--!sealed` line among the comments above the script's first statement."""
    for leading in root.named_children:
        if leading.type != "comment":
            return False
        if (leading.text or b"").strip() == b"--!sealed":
            return True
    return False


def _marked_by(node: Node, root: Node, every_top_level: bool) -> Node | None:
    """The function declaration `node` marks for sealing (itself, or the one after it)."""
    if every_top_level and node.type == "function_declaration" and node.parent == root:
        return node
    if node.type == "comment" and (node.text or b"").strip() in ANNOTATIONS:
        following = node.next_named_sibling
        if following is not None and following.type == "function_declaration":
            return following
    return None


def marked_functions(root: Node, *, every_top_level: bool = False) -> list[Marked]:
    """Function declarations right after a `--@sealed` comment line (or, with
    `every_top_level` or a `--!sealed` line before the script's first statement, every
    function declared at the script's top level too), in source order; one inside a sealed
    function is sealed with it."""
    found: list[Marked] = []
    if not every_top_level and not any(a in (root.text or b"") for a in ANNOTATIONS):
        return found  # the common case, without walking the tree
    every_top_level = every_top_level or _sealed_script(root)
    for node in walk(root):
        marked = _marked_by(node, root, every_top_level)
        if marked is None or any(m.node.start_byte <= marked.start_byte < m.node.end_byte
                                 for m in found):  # already, or inside a sealed function
            continue
        name = marked.child_by_field_name("name")
        found.append(Marked(marked, name is not None and name.type == "method_index_expression"))
    return found


def _assigned_bindings(analysis: Analysis, root: Node) -> tuple[set[int], set[str]]:
    """Locals (by id) and globals (by name) assigned anywhere after their declaration."""
    bindings: set[int] = set()
    globals_: set[str] = set()
    for node in walk(root):
        if node.type not in ("assignment_statement", "update_statement"):
            continue
        if node.parent is not None and node.parent.type == "variable_declaration":
            continue
        for targets in node.named_children:
            if targets.type != "variable_list":
                continue
            for target in targets.named_children:
                if target.type != "identifier":
                    continue
                binding = analysis.binding_of(target)
                if binding is None:
                    globals_.add(text(target))
                else:
                    bindings.add(id(binding))
    for node in walk(root):  # `function f() end` assigns the global or local `f`
        if node.type == "function_declaration" and not is_local(node):
            name = node.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                binding = analysis.binding_of(name)
                if binding is None:
                    globals_.add(text(name))
                else:
                    bindings.add(id(binding))
    return bindings, globals_


class _Stubs:
    def __init__(self, analysis: Analysis, root: Node, compiler_assigned: set[Capture]) -> None:
        self.assigned_locals, self.assigned_globals = _assigned_bindings(analysis, root)
        self.analysis = analysis
        self.written = compiler_assigned

    def capture(self, capture: Capture, own_name: str | None, outer: dict[str, int]) -> str:
        kind, name = capture
        if kind == "local" and name == own_name:
            return "false"  # the sealed function itself
        if kind == "global" and name in _STANDARD and name not in self.assigned_globals:
            return "{" + name + "}"
        if kind == "local" and outer.get(name, -1) not in self.assigned_locals:
            return "{" + name + "}"  # never assigned again: its value now is its value
        setter = (f"function(v) {name}=v end" if capture in self.written else "false")
        return f"{{function() return {name} end,{setter}}}"


def _outer_bindings(analysis: Analysis, node: Node, captures: list[Capture]) -> dict[str, int]:
    """For each captured local name, the id of the binding it names outside `node`."""
    wanted = {name for kind, name in captures if kind == "local"}
    found: dict[str, int] = {}
    for child in walk(node):
        if child.type == "identifier" and text(child) in wanted:
            binding = analysis.binding_of(child)
            scope = binding.function.node if binding is not None else None
            if binding is not None and not (
                    scope is not None and node.start_byte <= scope.start_byte < node.end_byte):
                found[text(child)] = id(binding)
    return found


def seal_functions(data: bytes, root: Node, analysis: Analysis, license_secret: bytes,
                   path: str, *, every_top_level: bool = False, sealing: str = "",
                   shaped: fingerprint.Keyed | None = None) -> bytes:
    """The script with every marked function replaced by its stub (unchanged if none).
    `sealing` names the key the program is encrypted under (`sealing_context`: the copy's
    version and key generation); the loader writes it in the clear for the SDK to ask
    `/unlock` for that key. With `shaped` (the watermark's bias key), the functions are
    compiled in the shapes the license's code bits ask for (`shape`), so a buyer who lifts
    the program back to Luau keeps their mark."""
    marked = marked_functions(root, every_top_level=every_top_level)
    if not marked:
        return data
    encoding = Encoding.from_seed(hmac.new(license_secret, b"licore/sealed-encoding|" +
                                           path.encode(), hashlib.sha256).digest())
    source_analysis, source_marked = analysis, marked
    if shaped is not None:
        reshape = shape.mark_edits(root, data, [m.node for m in marked],
                                   fingerprint.code_bits(shaped,
                                                         fingerprint.bits_key(license_secret)))
        if reshape:
            reshaped = parser().parse(apply(data, reshape)).root_node
            source_analysis = analyse(reshaped)
            source_marked = marked_functions(reshaped, every_top_level=every_top_level)
            if len(source_marked) != len(marked):
                raise SealError(marked[0].node, "reshaping changed the sealed functions")
    program, captures = compile_functions(source_analysis, encoding,
                                          [(m.node, m.method) for m in source_marked])
    key = sealed_code_key(license_secret, sealing)
    nonce = hmac.new(license_secret, b"licore/sealed-nonce|" + path.encode() + b"|" +
                     hashlib.sha256(program).digest(), hashlib.sha256).hexdigest()[:32]
    sealed = seal(key, nonce, program)
    cipher = base64.b64encode(bytes.fromhex(sealed.cipher)).decode()
    written = _written_captures(analysis, [m.node for m in marked])
    stubs = _Stubs(analysis, root, written)
    edits: list[Edit] = []
    named = f',"{sealing}"' if sealing else ""  # which key: copies made before name none
    loader = (f'local {_LOADER_NAME}W=debug.info(1,"s") local function {_LOADER_NAME}(i,c) '
              f'local f return function(...) if not f then local L=shared and '
              f'shared.LicoreSealed if not L then error("licore: sealed code needs the licore '
              f'SDK",2) end f=L.entry("{nonce}","{cipher}","{sealed.tag}",{_LOADER_NAME}W,i,c'
              f'{named}) end return f(...) end end ')
    at = prelude_offset(data)
    edits.append((at, at, loader.encode()))
    for index, (mark, caps) in enumerate(zip(marked, captures, strict=True), start=1):
        edits.append(_stub_edit(mark, index, caps, stubs, analysis))
    return apply(data, edits)


def _written_captures(analysis: Analysis, nodes: list[Node]) -> set[Capture]:
    written: set[Capture] = set()
    for node in nodes:
        for child in walk(node):
            name = child.child_by_field_name("name")
            if (child.type == "function_declaration" and not is_local(child)
                    and name is not None and name.type == "identifier"):
                binding = analysis.binding_of(name)
                written.add(("global" if binding is None else "local", text(name)))
            if child.type not in ("assignment_statement", "update_statement"):
                continue
            for targets in child.named_children:
                if targets.type == "variable_list":
                    for target in targets.named_children:
                        if target.type == "identifier":
                            binding = analysis.binding_of(target)
                            written.add(("global" if binding is None else "local",
                                         text(target)))
    return written


def _stub_edit(mark: Marked, index: int, captures: list[Capture], stubs: _Stubs,
               analysis: Analysis) -> Edit:
    node = mark.node
    name = node.child_by_field_name("name")
    assert name is not None
    own = text(name) if is_local(node) else None
    outer = _outer_bindings(analysis, node, captures)
    if own is not None and id(analysis.binding_of(name)) in stubs.assigned_locals:
        own = None  # reassigned later: reach it through the variable, like any other
    listed = ",".join(stubs.capture(c, own, outer) for c in captures)
    call = f"{_LOADER_NAME}({index},{{{listed}}})"
    if is_local(node):
        stub = f"local {text(name)} {text(name)}={call}"
    elif name.type == "method_index_expression":
        table = name.child_by_field_name("table")
        method = name.child_by_field_name("method")
        assert table is not None and method is not None
        stub = f"{text(table)}.{text(method)}={call}"
    else:
        stub = f"{text(name)}={call}"
    return node.start_byte, node.end_byte, stub.encode()


_NONCE = re.compile(rb"^[0-9a-f]{32}$")
_TAG = re.compile(rb"^[0-9a-f]{64}$")
_CIPHER = re.compile(rb"^[A-Za-z0-9+/]{16,}={0,2}$")
_LITERAL = re.compile(rb"""["']([A-Za-z0-9+/=]{16,})["']""")
_CONTEXT = re.compile(rb"""["'](""" + (SEALED_FOR.pattern or "").encode() + rb""")["']""")
_MAX_TRIED = 10_000  # (program, key) pairs tried at most


Program = tuple[str, str, str, str]  # (sealing context, nonce, cipher hex, tag)


def sealed_programs_of(texts: Iterable[bytes]) -> list[Program]:
    """(context, nonce, cipher hex, tag) of every sealed program whose literals appear in
    the texts (a copy's own strings, or what a candidate's secret reads of its literals);
    each with every sealing context written beside it, and with none (the first form)."""
    nonces, tags, ciphers, contexts = set(), set(), set(), {""}
    for data in texts:
        contexts.update(m.group(1).decode() for m in _CONTEXT.finditer(data))
        for value in (m.group(1) for m in _LITERAL.finditer(data)):
            if _NONCE.match(value):
                nonces.add(value.decode())
            elif _TAG.match(value):
                tags.add(value.decode())
            elif _CIPHER.match(value):
                with contextlib.suppress(ValueError):
                    ciphers.add(base64.b64decode(value, validate=True).hex())
    if len(nonces) * len(tags) * len(ciphers) * len(contexts) > _MAX_TRIED:
        return []
    return [(x, n, c, t) for x in sorted(contexts) for n in nonces for t in tags
            for c in ciphers]


def sealed_owner(programs: Sequence[Program], candidates: Sequence[Candidate]) -> list[str]:
    """The licenses whose sealed-code key opens one of the programs: a program is
    encrypted and tagged for one license (and copy), and only the server can make one; but
    its literals can be pasted anywhere, so an owner is a hint for the tracer, never a
    verdict."""
    owners = []
    for candidate in candidates:
        keys: dict[str, str] = {}
        for context, nonce, cipher, tag in programs:
            key = keys.get(context)
            if key is None:
                key = keys[context] = sealed_code_key(candidate.license_secret, context)
            try:
                open_sealed(key, nonce, cipher, tag)
            except SealingError:
                continue
            owners.append(candidate.license_id)
            break
    return owners
