"""The composition root: the one place that knows every adapter and wires them together."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

from adapters_crypto import AesGcmKeyVault, Argon2Passwords, SystemClock, SystemRandom
from adapters_formats.codec import RobloxModelCodec
from adapters_http.web import LocalAccounts, WebConfig
from adapters_protection.luau_protector import LuauProtector
from adapters_storage import open_storage
from licore.services.deps import Deps, Settings

DEFAULT_DATABASE = "sqlite:///licore.db"
DEFAULT_DATA_DIR = "licore-data"


def env(name: str, default: str) -> str:
    return os.environ.get(f"LICORE_{name}", default)


def secret(name: str, size: int) -> bytes:
    """A server secret from `LICORE_<NAME>` (hex), else a file in the data directory, made
    on first use with owner-only permissions. Never from the command line."""
    given = os.environ.get(f"LICORE_{name.upper()}")
    if given:
        value = bytes.fromhex(given)
        if len(value) != size:
            raise SystemExit(f"LICORE_{name.upper()} must be {size} bytes of hex")
        return value
    directory = Path(env("DATA_DIR", DEFAULT_DATA_DIR))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as fh:
        fh.write(secrets.token_hex(size))
    return bytes.fromhex(path.read_text().strip())


def settings_from_env() -> Settings:
    defaults = Settings()
    return Settings(
        public_url=env("PUBLIC_URL", defaults.public_url),
        device_lifetime=int(env("DEVICE_LIFETIME", str(defaults.device_lifetime))),
        device_interval=int(env("DEVICE_INTERVAL", str(defaults.device_interval))),
        partner_rate_limit=int(env("PARTNER_RATE_LIMIT", str(defaults.partner_rate_limit))),
        runtime_key_rate_limit=int(env("RUNTIME_KEY_RATE_LIMIT",
                                       str(defaults.runtime_key_rate_limit))),
        runtime_ip_rate_limit=int(env("RUNTIME_IP_RATE_LIMIT",
                                      str(defaults.runtime_ip_rate_limit))),
        max_upload_bytes=int(env("MAX_UPLOAD_BYTES", str(defaults.max_upload_bytes))),
    )


def deps_from_env() -> Deps:
    return Deps(
        storage=open_storage(env("DATABASE_URL", DEFAULT_DATABASE)),
        clock=SystemClock(),
        random=SystemRandom(),
        vault=AesGcmKeyVault(secret("kek", 32)),
        passwords=Argon2Passwords(),
        models=RobloxModelCodec(),
        protector=LuauProtector(secret("watermark", 32)),
        settings=settings_from_env(),
        offload=asyncio.to_thread,
    )


def web_config(deps: Deps) -> WebConfig:
    """Every process serving the pages signs session cookies with one key; people sign in
    with local accounts (a single sign-on adapter would be chosen here)."""
    return WebConfig(session_key=secret("session_key", 32), sign_in=LocalAccounts(deps))
