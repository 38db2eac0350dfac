"""Builds and checks the SDK's two packages before they are published.

    python sdk/release.py check            the version agrees everywhere; both manifests hold
    python sdk/release.py wally [--out D]  the Wally package as `wally publish` uploads it
    python sdk/release.py npm [--out D]    the npm tarball, through `npm pack`

`wally publish` zips the package folder and posts the zip to the registry, which refuses a
zip over 2 MiB or without `wally.toml` at its root. What goes in the zip, as Wally decides
it: every file and folder under the package, less hidden entries at its root (`.*`, matched
against the path from the root), `wally.lock`,
`Packages`, `ServerPackages` and whatever `exclude` names; an entry `include` names goes in
even if something would leave it out. (When `include` is empty Wally also applies the
`.gitignore` of the folder it runs in; this package names its `include`.) Patterns are
globs over the path relative to the package, `*` crossing `/`. `default.project.json` is
written with its `name` set to the package's name part, as Wally rewrites it.

Nothing here talks to a registry: publishing stays a person's step (`wally publish`,
`npm publish`), after `check` and the tests pass. Exit status 1 and the problems printed
when something does not hold.
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent / "luau"
WALLY_MAX_BYTES = 2 * 1024 * 1024  # the registry reads at most this much of a publish
WALLY_ALWAYS_EXCLUDED = (".*", "wally.lock", "Packages", "ServerPackages")
NAME_PART = re.compile(r"^[a-z0-9-]{1,64}$")
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$")
REALMS = ("shared", "server", "dev")
# What the npm tarball must hold for roblox-ts: the typings, the module, the project file
# roblox-ts resolves the package by, and the manifest.
NPM_REQUIRED = ("package.json", "index.d.ts", "src/init.luau", "default.project.json")


def modules(package: Path = PACKAGE) -> list[str]:
    """The SDK's module files: the entry module `src/init.luau` and its children beside it,
    each of which both packages must hold."""
    return sorted(f"src/{p.name}" for p in (package / "src").glob("*.luau"))


def versions(package: Path = PACKAGE) -> dict[str, str | None]:
    """The version as each place states it: module, npm, Wally, the changelog's newest entry
    and the README's install line."""
    source = (package / "src" / "init.luau").read_text(encoding="utf-8")
    module = re.search(r'^\tVERSION = "([^"]*)"', source, re.M)
    changelog = re.findall(r"^## (\S+)", (package / "CHANGELOG.md").read_text(encoding="utf-8"),
                           re.M)
    npm = json.loads((package / "package.json").read_text(encoding="utf-8"))
    wally = tomllib.loads((package / "wally.toml").read_text(encoding="utf-8"))
    readme = re.search(r"licore/licore@(\S+?)[`\"]", (package / "README.md").read_text(
        encoding="utf-8"))
    return {
        "Licore.VERSION": module.group(1) if module else None,
        "package.json": npm.get("version"),
        "wally.toml": wally.get("package", {}).get("version"),
        "CHANGELOG.md": changelog[0] if changelog else None,
        "README.md": readme.group(1) if readme else None,
    }


def version_problems(package: Path = PACKAGE) -> list[str]:
    found = versions(package)
    problems = [f"{where} states no version" for where, v in found.items() if v is None]
    if len(set(found.values())) > 1:
        problems.append("the versions differ: " + ", ".join(f"{k} {v}" for k, v in found.items()))
    for where, v in found.items():
        if v is not None and not SEMVER.match(v):
            problems.append(f"{where}: {v!r} is not a semantic version")
    return problems


def wally_problems(package: Path = PACKAGE) -> list[str]:
    """What `wally publish` or the registry would refuse, or what would install wrongly."""
    try:
        manifest = tomllib.loads((package / "wally.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [f"wally.toml cannot be read: {exc}"]
    pkg: dict[str, Any] = manifest.get("package", {})
    problems: list[str] = []
    name = str(pkg.get("name", ""))
    scope, _, part = name.partition("/")
    if not (NAME_PART.match(scope) and NAME_PART.match(part)):
        problems.append(f"name {name!r} is not scope/name (lower-case letters, digits, dashes)")
    if not SEMVER.match(str(pkg.get("version", ""))):
        problems.append(f"version {pkg.get('version')!r} is not a semantic version")
    if pkg.get("realm") not in REALMS:
        problems.append(f"realm {pkg.get('realm')!r} is not one of {', '.join(REALMS)}")
    if pkg.get("realm") == "shared":
        problems.append("realm shared would replicate the SDK (and its callers' keys) to "
                        "clients: it runs on the server only")
    if not re.match(r"^https://\S+$", str(pkg.get("registry", ""))):
        problems.append(f"registry {pkg.get('registry')!r} is not an https URL")
    if pkg.get("private"):
        problems.append("the package is marked private: wally publish refuses it")
    for pattern in pkg.get("include", []):
        if not any(_matches(rel, [pattern]) for rel in _walk(package)):
            problems.append(f"include {pattern!r} names nothing in the package")
    for section in ("dependencies", "server-dependencies"):
        if manifest.get(section):
            problems.append(f"[{section}] is not empty: the SDK has no dependency")
    project = package / "default.project.json"
    if not project.is_file():
        problems.append("default.project.json is missing: the package would sync as a Folder")
    else:
        tree = json.loads(project.read_text(encoding="utf-8")).get("tree", {})
        if not (package / str(tree.get("$path", "")) / "init.luau").is_file():
            problems.append("default.project.json does not map the root to a folder holding "
                            "init.luau")
    if not problems:
        contents = wally_contents(package)
        if "wally.toml" not in contents or "src/init.luau" not in contents:
            problems.append("the package would not hold wally.toml and src/init.luau")
        problems += [f"the package would not hold {m}" for m in modules(package)
                     if m not in contents]
        size = len(wally_zip(package))
        if size > WALLY_MAX_BYTES:
            problems.append(f"the package is {size} bytes, over the registry's "
                            f"{WALLY_MAX_BYTES}")
    return problems


def _walk(package: Path) -> list[str]:
    return sorted(p.relative_to(package).as_posix() for p in package.rglob("*"))


def _matches(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, p.lstrip("/")) for p in patterns)


def wally_contents(package: Path = PACKAGE) -> list[str]:
    """The entries (folders end in `/`) of the package as Wally packs it."""
    pkg = tomllib.loads((package / "wally.toml").read_text(encoding="utf-8"))["package"]
    include: list[str] = list(pkg.get("include", []))
    exclude: list[str] = [*pkg.get("exclude", []), *WALLY_ALWAYS_EXCLUDED]
    kept: list[str] = []

    def visit(folder: Path) -> None:
        for entry in sorted(folder.iterdir()):
            rel = entry.relative_to(package).as_posix()
            if not _matches(rel, include) and _matches(rel, exclude):
                continue  # a left-out folder is not entered
            if entry.is_dir():
                kept.append(rel + "/")
                visit(entry)
            else:
                kept.append(rel)

    visit(package)
    return kept


def wally_zip(package: Path = PACKAGE) -> bytes:
    pkg = tomllib.loads((package / "wally.toml").read_text(encoding="utf-8"))["package"]
    part = str(pkg["name"]).split("/")[1]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel in wally_contents(package):
            if rel.endswith("/"):
                data = b""
            elif rel == "default.project.json":
                project = json.loads((package / rel).read_text(encoding="utf-8"))
                project["name"] = part
                data = json.dumps(project, indent=2).encode()
            else:
                data = (package / rel).read_bytes()
            archive.writestr(_entry(rel), data)
    return out.getvalue()


def _entry(rel: str) -> zipfile.ZipInfo:
    """The same bytes for the same sources, whenever and wherever built: a fixed time (a
    name's own time would be the clock's, or the checkout's mtime) and fixed permissions."""
    info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o40755 << 16 | 0x10) if rel.endswith("/") else (0o100644 << 16)
    return info


def wally_file_name(package: Path = PACKAGE) -> str:
    pkg = tomllib.loads((package / "wally.toml").read_text(encoding="utf-8"))["package"]
    scope, part = str(pkg["name"]).split("/")
    return f"{scope}_{part}@{pkg['version']}.zip"


def npm_pack(out: Path, package: Path = PACKAGE, npm: str | None = None) -> Path:
    """Runs `npm pack` on a copy of the package (npm writes nothing into the checkout) and
    returns the tarball."""
    npm = npm or shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    out.mkdir(parents=True, exist_ok=True)
    work = out / "npm-pack-source"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(package, work)
    # npm is found on PATH by shutil.which (or given by the caller); no shell.
    result = subprocess.run(  # noqa: S603
        [npm, "pack", "--json", "--pack-destination", str(out.resolve())], cwd=work,
        capture_output=True, text=True, timeout=300, check=False)
    shutil.rmtree(work, ignore_errors=True)
    if result.returncode != 0:
        raise RuntimeError(f"npm pack failed: {result.stderr[-2000:]}")
    return out / str(json.loads(result.stdout)[0]["filename"])


def npm_problems(tarball: Path, package: Path = PACKAGE) -> list[str]:
    with tarfile.open(tarball) as tar:
        names = {m.name.removeprefix("package/") for m in tar.getmembers() if m.isfile()}
        member = tar.extractfile("package/package.json")
        manifest = json.loads(member.read()) if member else {}
    problems = [f"the tarball has no {need}" for need in (*NPM_REQUIRED, *modules(package))
                if need not in names]
    if manifest.get("name") != "@rbxts/licore":
        problems.append(f"the npm name is {manifest.get('name')!r}, not '@rbxts/licore'")
    if manifest.get("types") != "index.d.ts" or manifest.get("main") != "src/init.luau":
        problems.append("package.json's types/main are not index.d.ts / src/init.luau")
    if manifest.get("publishConfig", {}).get("access") != "public":
        problems.append("a scoped package publishes as private unless publishConfig.access "
                        "is public")
    stray = sorted(n for n in names if n.startswith(".") or "/." in n)
    if stray:
        problems.append(f"hidden files in the tarball: {stray}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("check", "wally", "npm"))
    parser.add_argument("--out", type=Path, default=Path("dist"))
    args = parser.parse_args(argv)
    problems = version_problems() + wally_problems()
    if args.what == "wally" and not problems:
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / wally_file_name()
        target.write_bytes(wally_zip())
        print(f"{target}: {target.stat().st_size} bytes, {len(wally_contents())} entries")
    elif args.what == "npm" and not problems:
        tarball = npm_pack(args.out)
        problems += npm_problems(tarball)
        print(f"{tarball}: {tarball.stat().st_size} bytes")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    if not problems:
        print(f"version {versions()['wally.toml']}: ready to publish")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
