"""The SDK as a Roblox developer installs it, rebuilt here without Wally or Rojo binaries.

`wally_install` lays a package out the way `wally install` does: the package's files under
`<Packages>/_Index/<scope>_<name>@<version>/<name>/`, and beside `_Index` a link module
`<Alias>.lua` that is one line, `return require(script.Parent._Index["..."]["<name>"])`.

`rojo_tree` turns a folder into the instance tree Rojo syncs from it, by Rojo's documented
sync rules: a folder holding `default.project.json` is that project's tree (its `$path`s
relative to the project file, the folder's own name kept); a folder holding `init.luau` (or
`init.lua`) is a ModuleScript with that source and the folder's other entries as children
(`init.server.*` a Script, `init.client.*` a LocalScript); any other folder is a Folder;
`*.server.luau` / `*.client.luau` / `*.luau` files are Scripts / LocalScripts /
ModuleScripts; files of any other kind are left out (they cannot be required).

`LuauGame` puts such a tree into the real Luau VM as tables (`script.Parent.Child` works) and
gives each script the `script` and `require` Roblox gives it: `require` accepts a ModuleScript,
or a path to one by Roblox's string rules (`@self/X` the script's child X, `./X` its sibling,
`../X` its parent's sibling), runs it once and hands every later caller the same value.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import attrs

from tests.support.luau_vm import pluau

SOURCE_SUFFIXES = {".server.luau": "Script", ".server.lua": "Script",
                   ".client.luau": "LocalScript", ".client.lua": "LocalScript",
                   ".luau": "ModuleScript", ".lua": "ModuleScript"}


@attrs.define
class Inst:
    name: str
    class_name: str
    source: str | None = None
    children: list[Inst] = attrs.Factory(list)

    def child(self, name: str) -> Inst:
        return next(c for c in self.children if c.name == name)


def wally_install(package: Path, project: Path, alias: str) -> Path:
    """Installs `package` into `project` as `wally install` would; returns the link module."""
    manifest = tomllib.loads((package / "wally.toml").read_text(encoding="utf-8"))["package"]
    scope, name = manifest["name"].split("/")
    folder = {"server": "ServerPackages", "dev": "DevPackages"}.get(
        manifest.get("realm", "shared"), "Packages")
    slot = f"{scope}_{name}@{manifest['version']}"
    packages = project / folder
    shutil.copytree(package, packages / "_Index" / slot / name)
    link = packages / f"{alias}.lua"
    link.write_text(f'return require(script.Parent._Index["{slot}"]["{name}"])\n',
                    encoding="utf-8")
    return link


def _script_kind(path: Path) -> tuple[str, str] | None:
    for suffix, kind in SOURCE_SUFFIXES.items():
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)], kind
    return None


def rojo_tree(path: Path, name: str | None = None) -> Inst | None:
    if path.is_dir():
        project = path / "default.project.json"
        if project.is_file():
            return _project(project, name or path.name)
        inst = Inst(name or path.name, "Folder")
        for entry in sorted(path.iterdir()):
            stem_kind = _script_kind(entry) if entry.is_file() else None
            if stem_kind and stem_kind[0] == "init":
                inst.class_name = stem_kind[1]
                inst.source = entry.read_text(encoding="utf-8")
                continue
            child = rojo_tree(entry)
            if child is not None:
                inst.children.append(child)
        return inst
    stem_kind = _script_kind(path)
    if stem_kind is None:
        return None
    stem, kind = stem_kind
    return Inst(name or stem, kind, path.read_text(encoding="utf-8"))


def _project(file: Path, name: str) -> Inst:
    data = json.loads(file.read_text(encoding="utf-8"))
    return _node(data["tree"], name, file.parent)


def _node(tree: dict[str, Any], name: str, base: Path) -> Inst:
    if "$path" in tree:
        inst = rojo_tree(base / tree["$path"], name)
        assert inst is not None, f"{tree['$path']} syncs to nothing"
    else:
        inst = Inst(name, tree.get("$className", "Folder"))
    for key, sub in tree.items():
        if not key.startswith("$"):
            inst.children.append(_node(sub, key, base))
    return inst


class LuauGame:
    """A synced tree in one sandboxed Luau VM; keep it alive while its values are used."""

    def __init__(self, root: Inst, lua: Any = None) -> None:
        """With `lua`, the tree goes into that VM (its owner sandboxes it when ready)."""
        self.lua = lua if lua is not None else pluau().Lua()
        if lua is None:
            self.lua.sandbox(True)
        self.by_table: dict[int, Inst] = {}
        self.parents: dict[int, Inst] = {}
        self.tables: dict[int, Any] = {}
        self.loaded: dict[int, Any] = {}
        self.children: dict[int, dict[str, Any]] = {}
        self.find_first_child = self.lua.create_function(self._find_first_child)
        self.root = self._table(root, None)

    def _table(self, inst: Inst, parent: Any) -> Any:
        t = self.lua.create_table()
        t.set("Name", inst.name)
        t.set("ClassName", inst.class_name)
        if parent is not None:
            t.set("Parent", parent)
        t.set("FindFirstChild", self.find_first_child)
        t.set("WaitForChild", self.find_first_child)  # everything exists already
        self.by_table[t.pointer] = inst
        self.tables[id(inst)] = t
        named: dict[str, Any] = {}
        for c in inst.children:
            self.parents[id(c)] = inst
            child = self._table(c, t)
            t.set(c.name, child)
            named.setdefault(c.name, child)
        self.children[t.pointer] = named
        return t

    def _find_first_child(self, _lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
        """`instance:FindFirstChild(name)`: the first child of that name, or nil."""
        this, name = args[0], as_text(args[1])
        return (self.children.get(this.pointer, {}).get(name),)

    def _resolve(self, script: Inst, path: str) -> Inst | None:
        """A string require's target, by Roblox's rules, or None if there is none."""
        head, *parts = path.split("/")
        at: Inst | None = {"@self": script, ".": self.parents.get(id(script))}.get(head)
        if head == "..":
            parent = self.parents.get(id(script))
            at = self.parents.get(id(parent)) if parent is not None else None
        for part in parts:
            at = next((c for c in at.children if c.name == part), None) if at else None
        return at

    def _require_from(self, script: Inst) -> Any:
        def require(_lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
            target = args[0] if args else None
            if isinstance(target, str) or hasattr(target, "as_bytes"):
                inst = self._resolve(script, as_text(target))
            else:
                inst = self.by_table.get(getattr(target, "pointer", -1))
            if inst is None or inst.class_name != "ModuleScript":
                # Roblox's words for the same mistake.
                raise RuntimeError("Attempted to call require with invalid argument(s).")
            if id(inst) not in self.loaded:
                results = self.run(inst)
                if len(results) != 1:
                    raise RuntimeError("Module code did not return exactly one value")
                self.loaded[id(inst)] = results[0]
            return (self.loaded[id(inst)],)

        return self.lua.create_function(require)

    def run(self, inst: Inst) -> list[Any]:
        """Runs a script with Roblox's `script` and `require` in its environment."""
        assert inst.source is not None
        env = self.lua.create_table()
        env.set("script", self.tables[id(inst)])
        env.set("require", self._require_from(inst))
        meta = self.lua.create_table()
        meta.set("__index", self.lua.globals())
        env.set_metatable(meta)
        chunk = self.lua.load_chunk(inst.source, inst.name, env=env)
        return list(chunk())


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else bytes(value.as_bytes()).decode("utf-8")
