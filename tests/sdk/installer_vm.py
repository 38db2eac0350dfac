"""The Studio installer plugin (sdk/installer) in the real Luau VM, as Studio would run it.

The plugin's tree is synced from its Rojo project by Rojo's rules (tests/sdk/installed.py), so
its `Licore` module is the SDK package itself. Its scripts run in one sandboxed VM with
Roblox's string `require` (a path relative to the requiring script: `./X` a sibling, `../X` a
sibling of the parent), the `plugin` global and the Studio services of
tests/sdk/fake_studio.luau, and the datatype constructors of tests/sdk/fake_roblox.luau.
HttpService's requests are made by the host over real HTTP (httpx), and
SerializationService reads the model file with licore's own codec; `task.wait` calls back into
the test, which records each wait and may act during it (approve the sign-in, say).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from adapters_formats.codec import RobloxModelCodec
from licore.builds.tree import Instance
from tests.sdk.installed import Inst, rojo_tree
from tests.support.luau_vm import pluau

ROOT = Path(__file__).resolve().parents[2]
INSTALLER = ROOT / "sdk" / "installer"
HERE = Path(__file__).resolve().parent

# Enums the plugin names, beside those of fake_roblox.luau (each item a table with its Name).
ENUMS = {
    "AutomaticSize": ["None", "X", "Y", "XY"],
    "TextXAlignment": ["Left", "Center", "Right"],
    "SortOrder": ["Name", "Custom", "LayoutOrder"],
}

TASK = """
local wait = ...
return { wait = wait, spawn = function(fn, ...) fn(...) end }
"""


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value.as_bytes())


def _text(value: Any) -> str:
    return _as_bytes(value).decode("utf-8")


def first(results: list[Any]) -> Any:
    return results[0] if results else None


def call(obj: Any, name: str, *args: Any) -> Any:
    """`obj:name(...)`'s first result."""
    return first(obj.get(name)(obj, *args))


def items(table: Any) -> list[Any]:
    """A Luau array as a list."""
    return [table.get(i) for i in range(1, table.len() + 1)]


def _plain(inst: Instance) -> dict[str, Any]:
    """What the SerializationService stand-in builds: class, name, a script's Source."""
    node: dict[str, Any] = {"ClassName": inst.class_name, "Name": inst.name,
                            "Children": [_plain(c) for c in inst.children]}
    source = inst.properties.get("Source")
    if source is not None:
        node["Source"] = bytes(source.value).decode("utf-8")
    return node


class StudioVM:
    """One Studio session with the plugin loaded; keep it alive while its values are used."""

    def __init__(self, *, serialization: bool = True,
                 on_wait: Callable[[float], None] | None = None,
                 deserialize_fails: bool = False,
                 config: dict[str, str] | None = None) -> None:
        self.lua = pluau().Lua()
        self.waits: list[float] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.answers: list[tuple[str, int, bytes]] = []  # (url, status, body) as received
        self.deserialized: list[bytes] = []
        self.on_wait = on_wait
        self.deserialize_fails = deserialize_fails
        self.http = httpx.Client(timeout=30)
        self.tree = rojo_tree(INSTALLER)
        assert self.tree is not None
        self.parents: dict[int, Inst] = {}
        self._index(self.tree)
        self.loaded: dict[int, Any] = {}
        self.config = config

        studio = self.lua.load_chunk((HERE / "fake_studio.luau").read_text(), "fake_studio")()[0]
        roblox = self.lua.load_chunk((HERE / "fake_roblox.luau").read_text(), "fake_roblox")()[0]
        self.studio = studio
        g = self.lua.globals()
        env = roblox.get("env")
        for name in ("Vector3", "Vector2", "Vector3int16", "Vector2int16", "CFrame", "Color3",
                     "UDim", "UDim2", "Rect", "NumberRange", "Ray", "BrickColor", "Faces",
                     "Axes", "NumberSequenceKeypoint", "NumberSequence",
                     "ColorSequenceKeypoint", "ColorSequence", "PhysicalProperties", "Font",
                     "Content"):
            g.set(name, env.get(name))
        enum = env.get("Enum")
        studio_enum = studio.get("Enum")
        for name in ("FinishRecordingOperation", "InitialDockState"):
            enum.set(name, studio_enum.get(name))
        for name, items in ENUMS.items():
            t = self.lua.create_table()
            for item in items:
                entry = self.lua.create_table()
                entry.set("Name", item)
                t.set(item, entry)
            enum.set(name, t)
        g.set("Enum", enum)
        g.set("Instance", studio.get("Instance"))
        g.set("DockWidgetPluginGuiInfo", studio.get("DockWidgetPluginGuiInfo"))
        g.set("task", self.lua.load_chunk(TASK, "task")(self.lua.create_function(self._wait))[0])
        self.plugin = studio.get("plugin")()[0]
        g.set("plugin", self.plugin)

        host = self.lua.create_table()
        host.set("request", self.lua.create_function(self._request))
        if serialization:
            host.set("deserialize", self.lua.create_function(self._deserialize))
        # JSON for the HttpService stand-in: the SDK's own codec (the module is loaded later,
        # by the plugin's first require; these wrappers look it up when called).
        json_t = self.lua.create_table()
        json_t.set("encode", self.lua.create_function(
            lambda _l, a: (first(self.licore().get("jsonEncode")(a[0])),)))
        json_t.set("decode", self.lua.create_function(
            lambda _l, a: (first(self.licore().get("jsonDecode")(a[0])),)))
        host.set("json", json_t)
        made = studio.get("game")(host)
        self.game, self.services = made[0], made[1]
        g.set("game", self.game)
        self.lua.sandbox(True)

    # The synced tree and Roblox's require ----------------------------------------------------

    def _index(self, inst: Inst) -> None:
        for c in inst.children:
            self.parents[id(c)] = inst
            self._index(c)

    def node(self, name: str) -> Inst:
        assert self.tree is not None
        return self.tree.child(name)

    def _resolve(self, script: Inst, path: str) -> Inst:
        parts = path.split("/")
        at = self.parents[id(script)]
        head = parts.pop(0)
        if head == "..":
            at = self.parents[id(at)]
        elif head == "@self":
            at = script
        elif head != ".":
            raise RuntimeError(f"require path must start with ./, ../ or @self/: {path}")
        for part in parts:
            at = at.child(part)
        return at

    def _require_from(self, script: Inst) -> Any:
        def require(_lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
            target = self._resolve(script, _text(args[0]))
            if target.class_name != "ModuleScript":
                raise RuntimeError("Attempted to call require with invalid argument(s).")
            if id(target) not in self.loaded:
                results = self.run(target)
                assert len(results) == 1, "Module code did not return exactly one value"
                self.loaded[id(target)] = results[0]
            return (self.loaded[id(target)],)

        return self.lua.create_function(require)

    def run(self, inst: Inst) -> list[Any]:
        assert inst.source is not None
        env = self.lua.create_table()
        env.set("require", self._require_from(inst))
        meta = self.lua.create_table()
        meta.set("__index", self.lua.globals())
        env.set_metatable(meta)
        if self.config is not None and inst.name == "Config":
            # The operator's settings for this server (what they set before building).
            table = self.lua.create_table()
            for k, v in self.config.items():
                table.set(k, v)
            return [table]
        return list(self.lua.load_chunk(inst.source, inst.name, env=env)())

    def module(self, name: str) -> Any:
        node = self.node(name)
        if id(node) not in self.loaded:
            self.loaded[id(node)] = self.run(node)[0]
        return self.loaded[id(node)]

    def licore(self) -> Any:
        return self.module("Licore")

    def start(self) -> Any:
        """Runs the plugin's entry script, as Studio does when the plugin loads; returns the
        widget it made."""
        self.run(self.node("Main"))
        return self.plugin.get("made").get("widgets").get("LicoreInstaller")

    # Host callbacks ------------------------------------------------------------------------

    def _wait(self, _lua: Any, args: tuple[Any, ...]) -> tuple[float]:
        seconds = float(args[0]) if args and args[0] is not None else 0.0
        self.waits.append(seconds)
        if self.on_wait is not None:
            self.on_wait(seconds)
        return (seconds,)

    def _request(self, _lua: Any, args: tuple[Any, ...]) -> tuple[int, Any, str]:
        method, url, headers_json, body = (_text(a) for a in args)
        headers = json.loads(headers_json) if headers_json not in ("", "[]") else {}
        self.requests.append((method, url, headers))
        try:
            r = self.http.request(method, url, headers=headers,
                                  content=body.encode() if method != "GET" else None)
        except httpx.TransportError:
            return 0, self.lua.create_string(b""), "{}"
        self.answers.append((url, r.status_code, r.content))
        return (r.status_code, self.lua.create_string(r.content),
                json.dumps(dict(r.headers.items())))

    def _deserialize(self, _lua: Any, args: tuple[Any, ...]) -> tuple[str]:
        data = _as_bytes(args[0])
        self.deserialized.append(data)
        if self.deserialize_fails:
            raise RuntimeError("DeserializeInstancesAsync: unsupported format")
        model = RobloxModelCodec().read(data)
        return (json.dumps([_plain(r) for r in model.roots]),)

    # Reading and pressing the widget ---------------------------------------------------------

    def find(self, root: Any, name: str) -> Any:
        found = first(self.studio.get("find")(root, name))
        assert found is not None, f"no {name} in the widget"
        return found

    def text(self, root: Any, name: str) -> str:
        return _text(self.find(root, name).get("Text") or "")

    def visible(self, root: Any, name: str) -> bool:
        return bool(self.find(root, name).get("Visible"))

    def click(self, button: Any) -> None:
        self.studio.get("click")(button)

    def settings(self) -> dict[str, Any]:
        kept = self.plugin.get("made").get("settings")
        out: dict[str, Any] = {}
        kept.for_each(lambda k, v: out.__setitem__(_text(k), v))
        return out

    def array(self, values: list[Any]) -> Any:
        t = self.lua.create_table()
        for v in values:
            t.push(v)
        return t

    def close(self) -> None:
        self.http.close()
