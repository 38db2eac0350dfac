"""The ASGI application Hypercorn loads in each worker, configured from the environment
that `licore serve` prepared."""

from __future__ import annotations

import logging
import os
import sys

from adapters_http.app import FAMILIES, create_app
from licore_cli.compose import deps_from_env, web_config

logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s %(message)s")
_only = tuple(os.environ.get("LICORE_ONLY", ",".join(FAMILIES)).split(","))
_deps = deps_from_env()
app = create_app(_deps, only=_only, web_config=web_config(_deps))
