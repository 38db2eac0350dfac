"""The ASGI application Hypercorn loads in each worker, configured from the environment
that `licore serve` prepared."""

from __future__ import annotations

import os

from adapters_http.app import FAMILIES, create_app
from adapters_http.observability import configure_logging
from licore_cli.compose import deps_from_env, web_config

configure_logging(os.environ.get("LICORE_LOG_LEVEL", "INFO"))
_only = tuple(os.environ.get("LICORE_ONLY", ",".join(FAMILIES)).split(","))
_deps = deps_from_env()
app = create_app(_deps, only=_only, web_config=web_config(_deps))
