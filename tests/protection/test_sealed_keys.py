"""Sealed-code keys that move and stay private (docs/protection.md, "Keys that move" and
"What other scripts in the game can reach"): a copy's programs open only under the key of
its own version and key generation, the SDK keeps a key no longer than its `/unlock` answer
is valid, and no other script in the game server reaches a key, a program, or the first
word on which entry runs."""

from __future__ import annotations

import re

from adapters_protection.luau_protector import LuauProtector
from licore.protection import parse_protection_settings
from licore.sealing import sealed_code_key, sealing_context
from tests.protection.sealed_vm import NOW, SealedWorld

SECRET = b"license-secret-keys"
NO_LICENSE = "licore: sealed code needs a live license"
STRONG = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "strong"}]})
MINIFY = parse_protection_settings({"rules": [{"paths": ["*"], "preset": "minify"}]})
SOURCE = "\n".join([
    "--@sealed",
    "local function payout(kills) return kills * 25 + 5 end",
    "print(payout(4))",
])
OTHER = "\n".join([
    "--@sealed",
    "local function bonus(x) return x .. '!' end",
    "print(bonus('win'))",
])


def _copy(sealing: str, source: str = SOURCE, settings: object = MINIFY,
          path: str = "Game/Rewards") -> str:
    return LuauProtector().protect(path, source, settings, SECRET,  # type: ignore[arg-type]
                                   sealing=sealing)


def test_a_copys_programs_open_only_under_its_own_version_and_key_generation() -> None:
    made = {(v, g): _copy(sealing_context(v, g)) for v in ("ver_a", "ver_b") for g in (0, 1)}
    assert len({re.search(r'entry\("\w+","([^"]+)"', c).group(1)  # type: ignore[union-attr]
                for c in made.values()}) == 4  # four different ciphertexts
    for (version, generation), copy in made.items():
        world = SealedWorld(SECRET)
        assert world.run(copy) == "105"
        assert world.asked == [sealing_context(version, generation)]
        # A key recorded for any other copy of the same license opens nothing here.
        for other in made:
            if other != (version, generation):
                recorded = sealed_code_key(SECRET, sealing_context(*other))
                assert SealedWorld(SECRET, sealed_key=recorded).run(copy) == (
                    f"error: script:?: {NO_LICENSE}")
        first_form = sealed_code_key(SECRET)
        assert SealedWorld(SECRET, sealed_key=first_form).run(copy) == (
            f"error: script:?: {NO_LICENSE}")


def test_copies_made_before_keys_moved_still_run() -> None:
    world = SealedWorld(SECRET)
    assert world.run(_copy("")) == "105"
    assert world.asked == [""]  # no `sealed_for`: the first-form key


def test_the_sdk_keeps_a_key_only_while_its_unlock_answer_is_valid() -> None:
    context = sealing_context("ver_a", 0)
    world = SealedWorld(SECRET)
    assert world.run(_copy(context)) == "105"
    assert world.run(_copy(context, OTHER, path="Game/Bonus")) == "win!"
    assert world.asked == [context]  # the second script's program opened with the same key
    world.now = NOW + 301  # past the answer's `exp`: the key is gone
    assert world.run(_copy(context, OTHER, path="Game/Other")) == "win!"
    assert world.asked == [context, context]


_WALK = """
local seen, found = {}, {}
local function walk(value, path, depth)
  if depth > 6 or seen[value] then return end
  seen[value] = true
  for k, v in pairs(value) do
    local here = path .. "." .. tostring(k)
    if type(v) == "string" and #v >= 32 then table.insert(found, here .. "=" .. v) end
    if type(v) == "function" and path:sub(1, 6) == "shared" then
      table.insert(found, here .. "()")
    end
    if type(v) == "table" then walk(v, here, depth + 1) end
  end
  local mt = getmetatable(value)
  if type(mt) == "table" then walk(mt, path .. "<mt>", depth + 1) end
end
walk(shared, "shared", 0)
walk(_G, "_G", 0)
for _, line in ipairs(found) do print(line) end
local ok = pcall(function() shared.LicoreSealed.entry = print end)
print("door replaced:", ok)
"""


def test_no_other_script_reaches_a_key_or_a_program() -> None:
    """After a sealed function ran, a script walking every table reachable from `shared` and
    `_G` finds the door's one function and no key (nor the program's plain text)."""
    context = sealing_context("ver_a", 0)
    world = SealedWorld(SECRET)
    assert world.run(_copy(context, settings=STRONG)) == "105"
    seen = world.run(_WALK)
    key = sealed_code_key(SECRET, context)
    assert key not in seen and "KEY-1" not in seen
    assert [line for line in seen.splitlines() if "()" in line] == ["shared.LicoreSealed.entry()"]
    assert "door replaced: false" in seen


def test_an_entry_installed_before_the_sdk_is_never_the_one_asked() -> None:
    """Another script puts its own door in `shared` before the SDK loads: the copy runs
    through the SDK's, and the planted one never sees the program or what the stub hands
    over."""
    spy = "\n".join([
        "_G.spied = 0",
        "shared.LicoreSealed = {entry = function(...) _G.spied += 1 end}",
    ])
    world = SealedWorld(SECRET, before_sdk=spy)
    assert world.run(_copy(sealing_context("ver_a", 0))) == "105"
    assert world.run("print(_G.spied)") == "0"


def test_two_products_sdks_in_one_server_each_open_their_own() -> None:
    """A second SDK instance (another product's copy of the module) loads after the first:
    a copy whose programs the second cannot open goes on to the first's door."""
    first = SealedWorld(SECRET)
    # The second instance: same VM, its own module and client, with a key of no use here.
    from tests.sdk.luau_sdk import sdk_loader
    second = sdk_loader(first.lua, "=licore2")()
    config = first.lua.create_table()
    config.set("runtimeUrl", "https://licore.test/runtime")
    config.set("productId", "prod-2")
    config.set("licenseKey", "KEY-2")
    config.set("userId", 42)
    config.set("http", first.lua.create_function(lambda *_: (True, 200, '{"ok":false}')))
    config.set("now", first.lua.create_function(lambda *_: (first.now,)))
    config.set("newNonce", first.lua.create_function(lambda *_: ("n" * 20,)))
    config.set("sleep", first.lua.create_function(lambda *_: ()))
    second.get("new")(config)
    assert first.run(_copy(sealing_context("ver_a", 0))) == "105"
