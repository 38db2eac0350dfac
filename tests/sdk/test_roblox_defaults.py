"""Inside Roblox the SDK needs only runtimeUrl, productId and licenseKey: HTTP goes through
HttpService:RequestAsync, JSON through HttpService, nonces come from GenerateGUID and back-off
sleeps through task.wait. Here `game` and `task` are stand-ins with the shapes of Roblox's
documented API, set as globals before the module loads (as Roblox's are), and HttpService's
requests are answered by the sealing fake runtime of test_client."""

from __future__ import annotations

import json
from typing import Any

from tests.sdk.luau_sdk import Http, LuauSdk, as_bytes, method
from tests.sdk.test_client import KEY, NOW, FakeRuntime

# A stand-in DataModel with the HttpService surface the SDK uses. Its JSON is Python's json
# behind HttpService's methods: what matters is that the SDK calls HttpService, which the
# counters show.
PRELUDE = """
local calls = { RequestAsync = {}, JSONEncode = 0, JSONDecode = 0, GenerateGUID = 0, wait = {} }
local guid = 0
local HttpService = {}
function HttpService:RequestAsync(options)
    table.insert(calls.RequestAsync, options)
    local ok, status, body =
        __post(options.Url, options.Body, options.Method, options.Headers["Content-Type"])
    if not ok then
        error("HttpError: ConnectFail")
    end
    return { Success = status < 300, StatusCode = status, StatusMessage = "", Headers = {},
             Body = body }
end
function HttpService:JSONEncode(value)
    calls.JSONEncode += 1
    return __json_encode(value)
end
function HttpService:JSONDecode(text)
    calls.JSONDecode += 1
    return __json_decode(text)
end
function HttpService:GenerateGUID(curly)
    calls.GenerateGUID += 1
    guid += 1
    local id = string.format("%08X-ABCD-4EF0-9123-%012X", guid, guid * 7)
    return if curly then "{" .. id .. "}" else id
end
game = {
    GetService = function(self, name)
        assert(name == "HttpService", "unexpected service " .. tostring(name))
        return HttpService
    end,
}
task = { wait = function(seconds) table.insert(calls.wait, seconds); return seconds end }
-- Roblox's sandbox freezes every table held directly by a global; the counters sit one deeper.
__seen = { calls = calls }
"""


class Roblox:
    def __init__(self, runtime: Http) -> None:
        self.runtime = runtime
        self.seen: list[tuple[str, str, str]] = []
        self.sdk = LuauSdk(before=self.install)

    def install(self, lua: Any) -> None:
        def post(_lua: Any, args: tuple[Any, ...]) -> tuple[bool, int, str]:
            url, body, verb, content_type = (as_bytes(a).decode() for a in args)
            self.seen.append((verb, content_type, url))
            return self.runtime(url, body)

        def encode(_lua: Any, args: tuple[Any, ...]) -> tuple[str]:
            return (json.dumps(_to_python(args[0])),)

        def decode(_lua: Any, args: tuple[Any, ...]) -> tuple[Any]:
            return (_to_lua(lua, json.loads(as_bytes(args[0]))),)

        g = lua.globals()
        g.set("__post", lua.create_function(post))
        g.set("__json_encode", lua.create_function(encode))
        g.set("__json_decode", lua.create_function(decode))
        lua.load_chunk(PRELUDE, "roblox")()

    def calls(self) -> Any:
        return self.sdk.lua.globals().get("__seen").get("calls")


def _to_python(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if hasattr(value, "for_each"):
        out: dict[str, Any] = {}
        value.for_each(lambda k, v: out.__setitem__(as_bytes(k).decode(), _to_python(v)))
        return out
    return as_bytes(value).decode()


def _to_lua(lua: Any, value: Any) -> Any:
    if isinstance(value, dict | list):
        table = lua.create_table()
        items = value.items() if isinstance(value, dict) else enumerate(value, 1)
        for k, v in items:
            table.set(k, _to_lua(lua, v))
        return table
    return value


def _client(roblox: Roblox) -> Any:
    config = roblox.sdk.lua.create_table()
    config.set("runtimeUrl", "https://licore.test/runtime")
    config.set("productId", "prod-1")
    config.set("licenseKey", KEY)
    config.set("userId", 42)
    config.set("now", roblox.sdk.lua.create_function(lambda *_: (NOW,)))
    return roblox.sdk.call("new", config)[0]


def test_an_unlock_inside_roblox_uses_httpservice_for_everything() -> None:
    runtime = FakeRuntime()
    roblox = Roblox(runtime)
    data, reason = method(_client(roblox), "unlock")
    assert reason is None
    assert roblox.sdk.to_python(data) == {"tier": "gold", "n": 7}
    assert roblox.seen == [("POST", "application/json", "https://licore.test/runtime/unlock")]
    calls = roblox.calls()
    assert calls.get("GenerateGUID") == 1
    assert calls.get("JSONEncode") == 1 and calls.get("JSONDecode") >= 2  # answer + payload
    # The nonce is the GUID without hyphens: 32 characters of [A-Za-z0-9].
    nonce = runtime.requests[0][1]["nonce"]
    assert nonce == "00000001ABCD4EF09123000000000007"


def test_inside_roblox_a_failing_request_backs_off_through_task_wait() -> None:
    runtime = FakeRuntime()
    failures = [0]

    def flaky(url: str, body: str) -> tuple[bool, int, str]:
        if failures[0] < 2:
            failures[0] += 1
            return False, 0, ""  # RequestAsync raises, as it does when the host is unreachable
        return runtime(url, body)

    roblox = Roblox(flaky)
    assert method(_client(roblox), "unlock")[1] is None
    waits = roblox.calls().get("wait")
    assert [waits.get(1), waits.get(2)] == [1, 2]
