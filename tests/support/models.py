"""Model files made for tests: a folder of scripts whose sources hold a placeholder."""

from __future__ import annotations

from collections.abc import Sequence

from licore.builds.tree import Instance, Model, Prop

PLACEHOLDER = "LICORE_LICENSE_KEY"


def script(name: str, source: str, class_name: str = "Script", ref: str = "") -> Instance:
    return Instance(class_name, ref or f"s-{name}", {
        "Name": Prop("String", name.encode()),
        "Source": Prop("String", source.encode()),
        "Disabled": Prop("Bool", False),
    })


LICENSE_SCRIPT = f'''-- The product's license check
local KEY = "{PLACEHOLDER}"
local Licore = require(script.Parent.Licore)
return Licore.configure({{ key = KEY }})
'''

PLAIN_SCRIPT = '''-- plain, verifiable
local Players = game:GetService("Players")
Players.PlayerAdded:Connect(function(player)
    print("hello", player.Name)  -- greet
end)
'''


def product_model(fmt: str = "binary", extra: int = 0, also: Sequence[Instance] = ()) -> Model:
    children = [script("LicenseCheck", LICENSE_SCRIPT, "ModuleScript"),
                script("Greeter", PLAIN_SCRIPT)]
    children += [script(f"Extra{i}", f"print({i})\n") for i in range(extra)]
    children += also
    part = Instance("Part", "part", {
        "Name": Prop("String", b"Handle"),
        "Size": Prop("Vector3", (4.0, 1.0, 2.0)),
        "Anchored": Prop("Bool", True),
    })
    value = Instance("ObjectValue", "link", {
        "Name": Prop("String", b"Link"), "Value": Prop("Ref", "part")})
    root = Instance("Folder", "root", {"Name": Prop("String", b"Product")},
                    children=[*children, part, value])
    return Model(fmt, [root])
