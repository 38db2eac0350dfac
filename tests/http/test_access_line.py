"""The access line (adapters_http/observability.py, `record_request`): written straight to
the handler `configure_logging` installed when nothing else would see it, and then exactly
the line the logging path writes; through `logging` whenever anything else is configured."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from adapters_http import observability as o


@pytest.fixture
def configured() -> Iterator[io.StringIO]:
    """`configure_logging` as the server runs it, writing to a string."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, o._configured[0])
    stream = io.StringIO()
    o.configure_logging("INFO")
    handler = o._configured[0]
    assert handler is not None
    handler.setStream(stream)
    try:
        yield stream
    finally:
        root.handlers[:], o._configured[0] = saved[0], saved[2]
        root.setLevel(saved[1])
        o.access_log.handlers[:] = []
        o.access_log.filters[:] = []


def _scope(path: str) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "client": ("203.0.113.9", 5),
            "state": {"key_id": "key_abc"}}


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stream.getvalue().splitlines()]


def _alone() -> None:
    """The root's handlers as the server has them: pytest's own capture handlers, added for
    the test's body, would be a second one."""
    logging.getLogger().handlers[:] = [o._configured[0]]  # type: ignore[list-item]


def test_the_direct_line_is_the_line_logging_writes(configured: io.StringIO) -> None:
    _alone()
    token = o.request_id.set("rid-1")
    try:
        assert o._ours_alone() is not None
        o.record_request(_scope("/runtime/check"), 200, 0.00123)
        # A filter on the access logger sends the next line through `logging`.
        o.access_log.addFilter(lambda record: True)
        assert o._ours_alone() is None
        o.record_request(_scope("/runtime/check"), 200, 0.00123)
    finally:
        o.request_id.reset(token)
    direct, logged = configured.getvalue().splitlines()
    # Same keys in the same order, same values (the second may fall in the next second).
    a, b = json.loads(direct), json.loads(logged)
    a.pop("timestamp")
    b.pop("timestamp")
    assert list(a) == list(b) and a == b
    assert a["logger"] == "licore.access" and a["request_id"] == "rid-1"
    assert a["key_id"] == "key_abc" and a["duration_ms"] == 1.23


@pytest.mark.parametrize("change", ["handler on the access logger", "second root handler",
                                    "access logger at WARNING", "not propagating"])
def test_any_other_configuration_gets_the_line_through_logging(
        configured: io.StringIO, change: str) -> None:
    _alone()
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    if change == "handler on the access logger":
        o.access_log.addHandler(Keep())
    elif change == "second root handler":
        logging.getLogger().addHandler(Keep())
    elif change == "access logger at WARNING":
        o.access_log.setLevel(logging.WARNING)
    else:
        o.access_log.propagate = False
        o.access_log.addHandler(Keep())
    try:
        assert o._ours_alone() is None
        o.record_request(_scope("/v1/products"), 201, 0.01)
    finally:
        o.access_log.setLevel(logging.NOTSET)
        o.access_log.propagate = True
    if change == "access logger at WARNING":
        assert seen == [] and configured.getvalue() == ""  # the operator turned it off
    else:
        assert [r.getMessage() for r in seen] == ["request"]
        assert seen[0].__dict__["status"] == 201
