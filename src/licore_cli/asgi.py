"""The ASGI application Hypercorn loads in each worker, configured from the environment
that `licore serve` prepared, or that the operator gives another ASGI server
(`hypercorn licore_cli.asgi:app`, docs/operators.md, "Under another ASGI server")."""

from __future__ import annotations

import os
from collections.abc import Coroutine
from functools import partial
from typing import Any

from starlette.types import ASGIApp

from adapters_http.app import FAMILIES
from adapters_http.observability import OUTBOX_BACKLOG, configure_logging
from adapters_http.proxies import TrustedProxies
from adapters_http.site import ServedUnder
from adapters_http.waiting import WaitingForDatabase
from licore.services.wiring import UseCases
from licore_cli import kek, settings
from licore_cli.compose import app_of, deps_from_env, warm_protection, web_config
from licore_cli.hypercorn_close import close_when_the_client_leaves
from licore_cli.late_database import until_prepared
from licore_cli.memory import return_large_buffers
from licore_cli.worker import work_forever

return_large_buffers()
close_when_the_client_leaves()
configure_logging(os.environ.get("LICORE_LOG_LEVEL", "INFO"))
# As `licore serve` does before it starts: a process holding another key-encryption key, or
# a SQLite file that cannot be opened, stops here with one line (and its server with it); a
# PostgreSQL database that does not answer yet is waited for, serving 503 meanwhile.
_deps = deps_from_env()  # made first (nothing connects yet): the check tells its vault
_ready = kek.check_before_serving(_deps.vault)
RETRY_AFTER = 2  # seconds, told to callers while the database is awaited (as in an outage)
_only = tuple(os.environ.get("LICORE_ONLY", ",".join(FAMILIES)).split(","))
_loaded = settings.load()
_events = _loaded.events
_poll = _events.poll_ms / 1000


def _outbox(uc: UseCases) -> Coroutine[Any, Any, None]:
    return work_forever(uc.delivery, _poll, OUTBOX_BACKLOG.set, _events.slots,
                        scheduled=uc.lifecycle.sweep_expiries,
                        schedule_every=_events.sweep_ms / 1000)


def _warm(uc: UseCases) -> Coroutine[Any, Any, None]:
    return warm_protection(_deps, _only)


# Outermost, so every layer below (the runtime fast path included) sees the real client and
# the path the service is served under.
_app: ASGIApp = app_of(_deps, only=_only, web=web_config(),
                       background=[_warm, *[_outbox] * _events.workers])
if not _ready:
    _app = WaitingForDatabase(_app, partial(until_prepared, _deps.vault), RETRY_AFTER)
app = TrustedProxies(ServedUnder(_app, _loaded.root_path), _loaded.trusted_proxies)
