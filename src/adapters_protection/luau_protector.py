"""The protector port over tree-sitter-luau: safety checks and the six transforms.

Transforms run in a fixed order, each on a fresh parse of the previous one's output:
rename_locals with hoist_constants and encrypt_strings (one pass: their edits never
overlap), flatten, strip, watermark. Flatten reads the scopes of the original, carried
through the literal pass; the string decoder goes through the passes after the literals as
a stand-in, and is put in, finished once per license and size, at the end. The watermark
goes last so that it is written in the very text the buyer gets, where tracing reads it.
The output is a function of (source, rules, license secret) only. A script a rule cannot
handle safely is refused with the script and line named; protect never returns a partly
protected copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tree_sitter

from adapters_protection import scopes
from adapters_protection.analysis import Analysis, analyse
from adapters_protection.cipher import readable_literals
from adapters_protection.edits import Edit, apply
from adapters_protection.fingerprint import DEFAULT_SECRET, bias_key, bits_key, code_bits
from adapters_protection.flatten import flatten
from adapters_protection.literals import (
    decoder_standin,
    protect_literals,
    put_decoder,
    value_literals,
)
from adapters_protection.minify import Located, strip, stripped
from adapters_protection.names import Namer
from adapters_protection.rename import rename_edits, rename_locals
from adapters_protection.scopes import Scopes
from adapters_protection.seal_compiler import SealError
from adapters_protection.sealed import (
    marked_functions,
    seal_functions,
    sealed_owner,
    sealed_programs_of,
)
from adapters_protection.strings import (
    BadEscape,
    decode_quoted,
    interpolation_pieces,
    literal_bytes,
)
from adapters_protection.syntax import (
    LANGUAGE,
    Node,
    first_syntax_error,
    is_interpolated,
    line,
    parser,
    text,
)
from adapters_protection.tracing import trace as trace_scripts
from adapters_protection.typeless import erase_types
from adapters_protection.watermark import mark_edits
from licore.protection import (
    Candidate,
    ProtectionFailed,
    ProtectionProblem,
    ProtectionSettings,
    Trace,
    protect_each,
)

_MAX_LOCALS = 200  # Luau's limits per function
_MAX_UPVALUES = 200
_ADDED_LOCALS = 2
_TRIAL_SECRET = b"licore/check"
# Transforms that need to know which identifier is which variable.
_NEEDS_SCOPES = frozenset({"rename_locals", "flatten", "hoist_constants", "encrypt_strings"})


_CALL_OPENINGS = tree_sitter.Query(LANGUAGE, '(arguments . "(" @open)')


def _ambiguous_calls(root: Node) -> list[Node]:
    """Calls whose `(` starts a new line: Luau refuses them as ambiguous, tree-sitter not."""
    found = []
    for opening in tree_sitter.QueryCursor(_CALL_OPENINGS).captures(root).get("open", []):
        args = opening.parent
        callee = args.prev_sibling if args is not None else None
        if callee is not None and opening.start_point.row != callee.end_point.row:
            found.append(opening)
    return sorted(found, key=lambda n: n.start_byte)


_DECODERS_KEPT = 1 << 10
_CODES_KEPT = 1 << 8
_MIN_KEY = 16  # the tracer does not search for shorter keys


_READ_MIN = 16 << 10  # characters of each script read under each candidate's secret, at least
_READ_WORK = 8 << 20  # and at most this many over all candidates
_SEALED_READ_MIN = 256 << 10  # of a script holding sealed code, read for its program


def _readings(scripts: Sequence[tuple[str, str]],
              candidates: Sequence[Candidate]) -> list[tuple[str, str]]:
    out = []
    for candidate in candidates:
        if len(candidate.searched) < _MIN_KEY:
            continue
        for path, whole in scripts:
            script = whole[:max(_READ_MIN, _READ_WORK // max(1, len(candidates)))]
            lines: dict[int, list[str]] = {}
            for value, offset in readable_literals(script, candidate.license_secret):
                if candidate.searched in value:
                    lines.setdefault(script.count("\n", 0, offset), []).append(
                        value.decode(errors="replace").replace("\n", " "))
            if lines:
                last = max(lines)
                out.append((path, "\n".join(" ".join(lines.get(i, []))
                                            for i in range(last + 1))))
    return out


_PROGRAM_WORDS = "a sealed program (sealed functions' bytecode, opened by one license's key only)"


def _sealed_owners(scripts: Sequence[tuple[str, str]],
                   candidates: Sequence[Candidate]) -> dict[str, str]:
    """The licenses whose sealed programs the copy holds, in words for the evidence. A hint
    only: the literals of a program are pasted into a comment as easily as a key, so a
    program counts where the copy's own marks agree with it (`tracing.trace`)."""
    texts = [s.encode() for _, s in scripts]
    programs = sealed_programs_of(texts)
    owners = sealed_owner(programs, candidates) if programs else []
    sealed_texts = [s for s in texts if b"LicoreSealed" in s]
    if not owners and sealed_texts:
        # Literals an encrypt_strings copy holds, read per license: the loader sits at the
        # top of its script, so the start of each script is read (bounded work in all).
        window = max(_SEALED_READ_MIN, _READ_WORK // max(1, len(candidates)))
        for candidate in candidates:
            readings = [b'"' + value + b'"' for s in sealed_texts
                        for value, _ in readable_literals(s[:window].decode(errors="replace"),
                                                          candidate.license_secret)]
            if sealed_owner(sealed_programs_of(readings), [candidate]):
                owners.append(candidate.license_id)
    return {owner: _PROGRAM_WORDS for owner in sorted(set(owners))}


class LuauProtector:
    """Pure: output depends only on (source, settings, license_secret)."""

    def trace(self, scripts: Sequence[tuple[str, str]],
              candidates: Sequence[Candidate]) -> Trace:
        # An encrypted literal reads only under its license's secret, so the tracer also
        # gets each candidate's readings of the literals, each on the line it came from,
        # to look for keys in (only the start of each script, where a key placeholder
        # usually sits: the work is per candidate).
        return trace_scripts(scripts, candidates, self._bias_key,
                             readings=_readings(scripts, candidates),
                             artefacts=_sealed_owners(scripts, candidates))

    def __init__(self, watermark_secret: bytes = DEFAULT_SECRET) -> None:
        self._parser = parser()
        self._bias_key = bias_key(watermark_secret)
        # Finished string decoders (see `_finished_decoder`): a few per license.
        self._decoders: dict[tuple[bytes, str, bool, bool], bytes] = {}
        self._last_literals: tuple[Node, list[Node]] | None = None
        self._codes: dict[bytes, Callable[[Sequence[bytes]], list[int]]] = {}

    def _parse(self, data: bytes) -> tree_sitter.Tree:
        return self._parser.parse(data)

    def _read(self, path: str, source: str) -> tuple[bytes, Node, list[ProtectionProblem]]:
        """The script's tree; for syntax newer than the grammar, that of a copy with its
        types erased (see `typeless`), with notes saying so."""
        data = source.encode()
        root = self._parse(data).root_node
        if not root.has_error:
            return data, root, []
        erased = erase_types(source)
        if erased is None:
            return data, root, []
        erased_data = erased.source.encode()
        erased_root = self._parse(erased_data).root_node
        if erased_root.has_error:  # an error of its own: lines are the seller's still
            return erased_data, erased_root, []
        error = first_syntax_error(root)
        notes = [ProtectionProblem(
            path, line(error) if error is not None else 0,
            "Luau syntax newer than the protector's grammar: the copy is made with the "
            "script's type annotations and declarations removed (types do not run, so "
            "the script does the same)", blocking=False)]
        notes += [ProtectionProblem(
            path, source.count("\n", 0, at) + 1, "the attribute "
            f"{source[at:].split(None, 1)[0]} is dropped from the copy (attributes do not "
            "change results; for @native, add --!native at the top of the script to compile "
            "all of it natively)", blocking=False) for at in erased.attribute_offsets]
        return erased_data, erased_root, notes

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
        problems += self._literal_problems(path, root, analysis, transforms)
        if "rename_locals" in transforms:
            problems += [ProtectionProblem(path, line(n), f"uses {text(n)}: local names are "
                                           "kept as written", blocking=False)
                         for n in analysis.env_users]
        return problems

    def _literal_problems(self, path: str, root: Node, analysis: Analysis,
                          transforms: frozenset[str]) -> list[ProtectionProblem]:
        if not transforms & {"hoist_constants", "encrypt_strings"}:
            return []
        problems = []
        for node in self._value_literals(root):
            try:
                if is_interpolated(node):
                    for start, end in interpolation_pieces(node):
                        decode_quoted((node.text or b"")[start - node.start_byte:
                                                         end - node.start_byte].decode())
                elif node.type == "string":
                    literal_bytes(node)
            except BadEscape as error:
                problems.append(ProtectionProblem(path, line(node), f"string literal: {error}"))
        # Each rule adds up to two locals to the chunk and two upvalues to a function.
        for fn in analysis.functions:
            if fn.node is None and fn.max_active + _ADDED_LOCALS > _MAX_LOCALS:
                problems.append(ProtectionProblem(
                    path, 1, f"the script's top level has {fn.max_active} locals; "
                    f"hoist_constants/encrypt_strings need {_ADDED_LOCALS} more "
                    f"(Luau allows {_MAX_LOCALS})"))
            if len(fn.upvalues) + _ADDED_LOCALS > _MAX_UPVALUES:
                problems.append(ProtectionProblem(
                    path, fn.line, f"a function here uses {len(fn.upvalues)} upvalues; "
                    f"hoist_constants/encrypt_strings need {_ADDED_LOCALS} more "
                    f"(Luau allows {_MAX_UPVALUES})"))
        return problems

    def _value_literals(self, root: Node) -> list[Node]:
        """`value_literals(root)`, kept for the last tree asked about: the checks and the
        literal pass both read them, one right after the other."""
        last = self._last_literals  # one read: builds run on threads
        if last is not None and last[0] is root:
            return last[1]
        nodes = value_literals(root)
        self._last_literals = (root, nodes)
        return nodes

    def _analyse(self, root: Node, transforms: frozenset[str]) -> Analysis | None:
        if transforms & _NEEDS_SCOPES and not root.has_error:
            return analyse(root)
        return None

    def check(
        self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings
    ) -> list[ProtectionProblem]:
        """Everything that would stop `protect` for any license, script and line named.

        Besides the static checks, each script is protected once with a trial secret and
        the result parsed, so a fault of the protector itself also blocks publishing
        instead of reaching a buyer's download."""
        problems: list[ProtectionProblem] = []
        for path, source in scripts:
            transforms = settings.transforms_for(path)
            if not transforms:
                continue
            data, root, notes = self._read(path, source)
            analysis = self._analyse(root, transforms)
            found = notes + self._problems(path, root, transforms, analysis)
            problems += found
            if not any(p.blocking for p in found):
                try:
                    self._transform(path, data, root, analysis, transforms, _TRIAL_SECRET,
                                    seal_all=settings.seals_all(path))
                except ProtectionFailed as failure:
                    problems += failure.problems
        return problems

    def protect(
        self, path: str, source: str, settings: ProtectionSettings, license_secret: bytes,
        *, sealing: str = ""
    ) -> str:
        transforms = settings.transforms_for(path)
        if not transforms:
            return source
        data, root, _ = self._read(path, source)
        analysis = self._analyse(root, transforms)
        blocking = [p for p in self._problems(path, root, transforms, analysis) if p.blocking]
        if blocking:
            raise ProtectionFailed(blocking)
        return self._transform(path, data, root, analysis, transforms, license_secret,
                               seal_all=settings.seals_all(path), sealing=sealing)

    def protect_all(self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings,
                    license_secret: bytes, *, sealing: str = "") -> list[str]:
        return protect_each(self, scripts, settings, license_secret, sealing=sealing)

    def _seal(self, path: str, data: bytes, root: Node, analysis: Analysis | None,
              license_secret: bytes, *, seal_all: bool, sealing: str) -> bytes | None:
        """The script with its sealed functions replaced by stubs; None when it has none."""
        if not marked_functions(root, every_top_level=seal_all):
            return None
        analysis = analysis or analyse(root)
        if analysis.env_users:
            raise ProtectionFailed([ProtectionProblem(
                path, line(analysis.env_users[0]), "uses getfenv/setfenv: its functions "
                "cannot be sealed (a sealed function's variables are not in an environment)")])
        try:
            return seal_functions(data, root, analysis, license_secret, path,
                                  every_top_level=seal_all, sealing=sealing,
                                  shaped=self._bias_key)
        except SealError as error:
            raise ProtectionFailed([ProtectionProblem(
                path, error.line, f"cannot seal this function: {error.reason}")]) from None

    def _transform(self, path: str, data: bytes, root: Node, analysis: Analysis | None,
                   transforms: frozenset[str], license_secret: bytes, *,
                   seal_all: bool = False, sealing: str = "") -> str:
        sealed = self._seal(path, data, root, analysis, license_secret, seal_all=seal_all,
                            sealing=sealing)
        if sealed is not None:  # sealing first: the stubs are then protected like any code
            data = sealed
            root = self._parse(data).root_node
            analysis = self._analyse(root, transforms)
        namer = Namer(license_secret, path, analysis.names if analysis else ())

        def fresh(new: bytes) -> tuple[bytes, Node, Analysis | None]:
            return new, self._parse(new).root_node, None

        rename = ("rename_locals" in transforms and analysis is not None
                  and not analysis.env_users)
        flat = "flatten" in transforms
        hoist, encrypt = "hoist_constants" in transforms, "encrypt_strings" in transforms
        names: list[Edit] = []
        if rename and analysis is not None:
            if not (hoist or encrypt):
                data, root, analysis = fresh(rename_locals(data, analysis, namer))
            else:  # renaming touches no literal: both go in one pass over one parse
                names = rename_edits(analysis, namer)
        added, decoder = range(0), ""
        carried: Scopes | None = None
        if hoist or encrypt:
            literals = protect_literals(
                data, root, namer, hoist=hoist, encrypt=encrypt,
                license_secret=license_secret, path=path, also=names,
                standin=decoder_standin(data), nodes=self._value_literals(root))
            added, decoder = literals.added, literals.decoder
            if flat and analysis is not None and literals.declared is not None:
                carried = scopes.carried(analysis, literals.moved, literals.data,
                                         literals.declared)
            data, root, analysis = fresh(literals.data)
        # Flattening comes after the literals, so its state arithmetic stays out of the
        # constant table (it is keyed already, and a table read per transition is slower);
        # the decoder it leaves as generated (flattening it would only slow decoding).
        if flat:
            if carried is None:
                carried = scopes.of(analysis or analyse(root))
            flattened = flatten(data, root, carried, namer, keep=added)
            # A tree takes about 45 bytes a byte of text: the last one (and what holds its
            # nodes) is let go before the next is made, so the two never take room at once.
            del root, analysis, carried
            data, root, _ = fresh(flattened)
        data, checked = self._strip_and_mark(data, root, transforms, license_secret)
        del root  # likewise, before the copy's own tree
        self._check_parses(path, checked if checked is not None else self._parse(data).root_node)
        if decoder:
            data = self._with_decoder(path, data, decoder, transforms, license_secret)
        return data.decode()

    def _strip_and_mark(self, data: bytes, root: Node, transforms: frozenset[str],
                        license_secret: bytes) -> tuple[bytes, Node | None]:
        """The last passes, strip and the watermark; and the tree of what they made, where
        they changed nothing (else it is for the caller to parse)."""
        if "strip" in transforms and "watermark" in transforms and not root.has_error:
            # The stripped text has the very tokens of this one, so this tree confirms the
            # watermark's edits (through where strip put each token): one parse fewer, of
            # text as long as the copy.
            minified, located = stripped(data, root)
            return self._watermark(minified, root, license_secret, located), None
        if "strip" in transforms:
            data = strip(data, root)
            root = self._parse(data).root_node
        if "watermark" in transforms and not root.has_error:
            return self._watermark(data, root, license_secret), None
        return data, root

    @staticmethod
    def _check_parses(path: str, root: Node) -> None:
        error = first_syntax_error(root)
        if error is not None:
            raise ProtectionFailed([ProtectionProblem(
                path, line(error), "the protected copy does not parse (a protector fault; "
                "turn this rule off for the script and report it)")])

    def _with_decoder(self, path: str, data: bytes, decoder: str, transforms: frozenset[str],
                      license_secret: bytes) -> bytes:
        """The finished string decoder put in for its stand-in."""
        finished = self._finished_decoder(path, decoder, transforms, license_secret)
        try:
            return put_decoder(data, finished)
        except ValueError as error:
            raise ProtectionFailed([ProtectionProblem(
                path, 1, f"{error} (a protector fault; turn encrypt_strings off for the "
                "script and report it)")]) from None

    def _finished_decoder(self, path: str, decoder: str, transforms: frozenset[str],
                          license_secret: bytes) -> bytes:
        """The string decoder as the passes after the literals would leave it in a copy.

        Flatten leaves it as written; strip and the watermark see nothing around it but
        `=` before and `;` after, and the watermark's carriers in it start past its
        fourth token, so their positions come from its own text: the decoder comes out the
        same in every script of a license with the same table size (and the stand-in in
        its place gives the code after it the same four tokens of context). It is made once
        per license and size, on a script holding it alone, parsed like any copy."""
        strip_it = "strip" in transforms
        marked = "watermark" in transforms
        key = (license_secret, decoder, strip_it, marked)
        finished = self._decoders.get(key)
        if finished is not None:
            return finished
        head = b"local _="
        data = head + decoder.encode()
        root = self._parse(data).root_node
        if strip_it and marked:
            minified, located = stripped(data, root)
            data = self._watermark(minified, root, license_secret, located)
        elif strip_it:
            data = strip(data, root)
        elif marked:
            data = self._watermark(data, root, license_secret)
        error = first_syntax_error(self._parse(data).root_node)
        if error is not None or not data.startswith(head):
            raise ProtectionFailed([ProtectionProblem(
                path, 1, "the protected copy's string decoder does not parse (a protector "
                "fault; turn encrypt_strings off for the script and report it)")])
        if len(self._decoders) >= _DECODERS_KEPT:
            self._decoders.clear()
        finished = self._decoders[key] = data[len(head):]
        return finished

    def _watermark(self, data: bytes, root: Node, license_secret: bytes,
                   located: Located | None = None) -> bytes:
        """`data` marked; `root` is its tree, or with `located`, that of the text it was
        stripped from (see `minify.stripped`)."""
        code = self._codes.get(license_secret)
        if code is None:  # a license's code, made once for all its scripts
            if len(self._codes) >= _CODES_KEPT:
                self._codes.clear()
            code = self._codes[license_secret] = code_bits(self._bias_key,
                                                           bits_key(license_secret))
        return apply(data, mark_edits(data.decode(), root, code, located))
