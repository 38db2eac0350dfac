"""The ASGI application Hypercorn loads in each worker, configured from the environment
that `licore serve` prepared."""

from __future__ import annotations

import os
from collections.abc import Coroutine
from typing import Any

from adapters_http.app import FAMILIES, create_app
from adapters_http.observability import OUTBOX_BACKLOG, configure_logging
from licore.services.license_lifecycle import LicenseLifecycle
from licore.services.wiring import UseCases
from licore_cli import settings
from licore_cli.compose import deps_from_env, web_config
from licore_cli.memory import return_large_buffers
from licore_cli.worker import work_forever

return_large_buffers()
configure_logging(os.environ.get("LICORE_LOG_LEVEL", "INFO"))
_only = tuple(os.environ.get("LICORE_ONLY", ",".join(FAMILIES)).split(","))
_deps = deps_from_env()
_events = settings.load().events
_poll = _events.poll_ms / 1000


def _outbox() -> Coroutine[Any, Any, None]:
    expiry = LicenseLifecycle.of(_deps.storage, _deps.clock, _deps.random, _deps.vault)
    return work_forever(UseCases.of(_deps).delivery, _poll, OUTBOX_BACKLOG.set,
                        expiry.sweep_expiries)


app = create_app(_deps, only=_only, web_config=web_config(_deps),
                 background=[_outbox] * _events.workers)
