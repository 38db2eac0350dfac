"""One verifying TLS context for every httpx client the tests make.

httpx builds a new verifying context (loading the CA bundle) for every client it is not
handed one, about 47 ms of CPU each, and its module-level `httpx.get`/`httpx.post` make a
client per call. The suite makes thousands of such calls to plain-HTTP servers on loopback,
so the bundle was being parsed thousands of times for connections that never use TLS. The
default context is made once and shared (an `ssl.SSLContext` is safe to share); any other
`verify` (a test's own CA, `verify=False`) goes through httpx unchanged.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx
import httpx._transports.default as transports

_make = httpx.create_ssl_context  # what the transports call by this name


@functools.cache
def _default(trust_env: bool, bundle: tuple[str | None, str | None]) -> ssl.SSLContext:
    """`bundle`: the CA file and folder the environment names, which httpx reads when
    `trust_env`; part of the key so that a test changing them gets a context of its own."""
    return _make(trust_env=trust_env)


def _shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None:
        return _default(trust_env, (os.environ.get("SSL_CERT_FILE"),
                                    os.environ.get("SSL_CERT_DIR")))
    return _make(verify=verify, cert=cert, trust_env=trust_env)


def install() -> None:
    setattr(transports, "create_ssl_context", _shared)  # noqa: B010 - not exported
