"""A seller's protection settings as values, their JSON parser, and the protector port."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Protocol

import attrs

TRANSFORMS: frozenset[str] = frozenset(
    {"strip", "rename_locals", "encrypt_strings", "hoist_constants", "flatten", "watermark"}
)
# Transforms whose output is a function of the text alone, the same for every license (the
# Protector contract below): a script under these only, without the key in it, comes out
# the same in every buyer's copy, so it is protected once (licore.builds.prepare).
SAME_FOR_EVERY_LICENSE: frozenset[str] = frozenset({"strip"})
PRESETS: Mapping[str, frozenset[str]] = {
    "none": frozenset(),
    "minify": frozenset({"strip"}),
    "light": frozenset({"strip", "rename_locals", "encrypt_strings", "watermark"}),
    "strong": TRANSFORMS,
}


# What a product's rules are until its seller says otherwise: every script protected with
# `light` (which keeps what each script does, and hides the buyer's key among encrypted
# strings). An unprotected script is only ever the seller's explicit choice: `exclude` it, or
# send other rules (`{}` leaves every script as written).
DEFAULT_RULES_JSON = '{"rules":[{"paths":["*"],"preset":"light"}]}'


class ProtectionSettingsError(ValueError):
    """The seller's protection JSON is malformed; `field` names the offending path."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@attrs.frozen
class ProtectionRule:
    """Scripts matching any name or path glob get `transforms` (empty set = identity).
    `preset` and `listed` keep the seller's own words (a preset is not spelled out into its
    transforms), so the settings read back as they were written."""

    transforms: frozenset[str]
    names: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    preset: str | None = None
    listed: tuple[str, ...] = ()

    def matches(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return name in self.names or any(fnmatchcase(path, glob) for glob in self.paths)


@attrs.frozen
class ProtectionSettings:
    """Rules in priority order (first match wins); excluded paths are never transformed."""

    rules: tuple[ProtectionRule, ...] = ()
    exclude: tuple[str, ...] = ()
    # Scripts (names or path globs) whose every top-level function is sealed, as if each
    # had a `--@sealed` line above it (docs/protection.md, "Sealed functions").
    sealed: tuple[str, ...] = ()

    def seals_all(self, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        return any(name == s or fnmatchcase(path, s) for s in self.sealed)

    def may_seal(self, path: str, source: str) -> bool:
        """Whether the script's copy may hold sealed functions, which differ per license
        (a program encrypted under the license's key): such a copy is never one made once
        and shared by every buyer, whatever its other rules. A cheap over-approximation:
        the settings list it, or its text has an annotation."""
        return bool(self.transforms_for(path)) and (
            self.seals_all(path) or "--@sealed" in source or "--!sealed" in source)

    def transforms_for(self, path: str) -> frozenset[str]:
        name = path.rsplit("/", 1)[-1]
        if any(name == e or fnmatchcase(path, e) for e in self.exclude):
            return frozenset()
        for rule in self.rules:
            if rule.matches(path):
                return rule.transforms
        return frozenset()


@attrs.frozen
class ProtectionProblem:
    """Why `path` cannot be transformed as asked, at `line` (1-based, 0 when unknown).

    A blocking problem means a rule cannot be applied safely: publishing must stop. A
    non-blocking one is a note: the protector works around it (for example by keeping a
    script's local names) and the seller should know.
    """

    path: str
    line: int
    message: str
    blocking: bool = True

    def __str__(self) -> str:
        where = f"{self.path}, line {self.line}" if self.line else self.path
        return f"{where}: {self.message}"


class ProtectionFailed(ValueError):
    """`protect` refused a script: it never returns a half-protected copy."""

    def __init__(self, problems: Sequence[ProtectionProblem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = tuple(problems)

    def __reduce__(self) -> tuple[type[ProtectionFailed], tuple[tuple[ProtectionProblem, ...]]]:
        # Made again from its problems, not its message, when it crosses from the process
        # that protected a script (adapters_protection.processes).
        return type(self), (self.problems,)


@attrs.frozen
class Candidate:
    """A license a leaked copy may have been made for: the secret its copies were protected
    with, and its plain key to look for (the secret itself when None)."""

    license_id: str
    license_secret: bytes
    license_key: bytes | None = None

    @property
    def searched(self) -> bytes:
        return self.license_secret if self.license_key is None else self.license_key


@attrs.frozen
class Trace:
    """The license a leaked copy names, and the evidence, in plain words (never a key).
    `license_id` None is "cannot tell": the evidence then says what was found and why it
    does not reach the threshold for naming anyone. Only marks in the copy name a license;
    `possibly_planted` are the licenses whose keys or sealed programs appear in the copy
    without a mark naming them (either can be copied into anyone's leak, so it is never the
    evidence)."""

    license_id: str | None
    evidence: tuple[str, ...]
    marked_names: int
    key_found: bool
    watermark_positions: int = 0
    possibly_planted: tuple[str, ...] = ()


class Protector(Protocol):
    def check(
        self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings
    ) -> list[ProtectionProblem]: ...

    def protect(
        self, path: str, source: str, settings: ProtectionSettings, license_secret: bytes,
        *, sealing: str = ""
    ) -> str:
        """The copy of `source` for one license: a function of exactly these arguments, and
        not of `license_secret` when the script's transforms are all in
        `SAME_FOR_EVERY_LICENSE`. `license_secret` is the license's protection secret,
        which also marks the copy for tracing; `sealing` names the key its sealed functions
        are encrypted under (`licore.sealing.sealing_context`; empty: the license's
        first-form key). Raises ProtectionFailed rather than return a partly transformed
        copy."""
        ...

    def protect_all(self, scripts: Sequence[tuple[str, str]], settings: ProtectionSettings,
                    license_secret: bytes, *, sealing: str = "") -> list[str]:
        """`protect` of each (path, source), in order: a build's scripts for one license,
        which an adapter may protect in several processes at once. Raises ProtectionFailed,
        naming the script, for the first that cannot be protected, whatever the error."""
        ...

    def trace(self, scripts: Sequence[tuple[str, str]],
              candidates: Sequence[Candidate]) -> Trace:
        """The candidate the scripts were protected for, or a Trace without one (cannot
        tell), never naming an innocent license but with a stated, tiny probability."""
        ...


def protect_each(protector: Protector, scripts: Sequence[tuple[str, str]],
                 settings: ProtectionSettings, license_secret: bytes, *,
                 sealing: str = "") -> list[str]:
    """`Protector.protect_all` done one script after another, in this process."""
    out = []
    for path, source in scripts:
        try:
            out.append(protector.protect(path, source, settings, license_secret,
                                         sealing=sealing))
        except ProtectionFailed:
            raise
        except Exception as err:  # any failure: no copy rather than a half-protected one
            raise ProtectionFailed([ProtectionProblem(path, 0, type(err).__name__)]) from None
    return out


def _strings(value: object, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ProtectionSettingsError(field, "must be a list of non-empty strings")
    return tuple(value)


def _rule(raw: object, field: str) -> ProtectionRule:
    if not isinstance(raw, dict):
        raise ProtectionSettingsError(field, "must be an object")
    unknown = set(raw) - {"names", "paths", "preset", "transforms"}
    if unknown:
        raise ProtectionSettingsError(f"{field}.{sorted(unknown)[0]}", "unknown field")
    names = _strings(raw.get("names"), f"{field}.names")
    paths = _strings(raw.get("paths"), f"{field}.paths")
    if not names and not paths:
        raise ProtectionSettingsError(field, "needs at least one of names or paths")
    transforms: set[str] = set()
    preset = raw.get("preset")
    if preset is not None and (not isinstance(preset, str) or preset not in PRESETS):
        raise ProtectionSettingsError(f"{field}.preset", f"must be one of {sorted(PRESETS)}")
    if isinstance(preset, str):
        transforms |= PRESETS[preset]
    listed = _strings(raw.get("transforms"), f"{field}.transforms")
    for i, t in enumerate(listed):
        if t not in TRANSFORMS:
            raise ProtectionSettingsError(f"{field}.transforms[{i}]", f"unknown transform {t!r}")
        transforms.add(t)
    return ProtectionRule(frozenset(transforms), names, paths,
                          preset if isinstance(preset, str) else None, listed)


def parse_protection_settings(raw: object) -> ProtectionSettings:
    """Parse the `protection` field of `POST /packages/settings` (schema: docs/protection.md)."""
    if not isinstance(raw, dict):
        raise ProtectionSettingsError("protection", "must be an object")
    unknown = set(raw) - {"rules", "exclude", "sealed"}
    if unknown:
        raise ProtectionSettingsError(f"protection.{sorted(unknown)[0]}", "unknown field")
    rules_raw = raw.get("rules", [])
    if not isinstance(rules_raw, list):
        raise ProtectionSettingsError("protection.rules", "must be a list")
    rules = tuple(_rule(r, f"protection.rules[{i}]") for i, r in enumerate(rules_raw))
    exclude = _strings(raw.get("exclude"), "protection.exclude")
    sealed = _strings(raw.get("sealed"), "protection.sealed")
    return ProtectionSettings(rules, exclude, sealed)


def settings_document(settings: ProtectionSettings) -> dict[str, object]:
    """The settings in the schema `parse_protection_settings` reads (docs/protection.md), in
    the seller's words; empty lists are left out."""
    document: dict[str, object] = {"rules": [_rule_document(r) for r in settings.rules]}
    if settings.exclude:
        document["exclude"] = list(settings.exclude)
    if settings.sealed:
        document["sealed"] = list(settings.sealed)
    return document


def _rule_document(rule: ProtectionRule) -> dict[str, object]:
    parts: dict[str, object] = {"names": list(rule.names), "paths": list(rule.paths),
                                "preset": rule.preset, "transforms": list(rule.listed)}
    return {k: v for k, v in parts.items() if v}


# What a product's rules are until its seller says otherwise (see DEFAULT_RULES_JSON).
DEFAULT_RULES = ProtectionSettings((ProtectionRule(PRESETS["light"], (), ("*",), "light"),))
