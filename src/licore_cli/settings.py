"""The operator's settings: read once at start from the environment (`LICORE_*`) and an
optional TOML file, every value checked, and every mistake reported as one line that names
the setting, what was wrong and what to write instead.

The environment wins over the file, so a container can override one value of a shared file.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from licore.events import Schedule
from licore.forwarded import Network, parse_networks
from licore.services.settings import Settings
from licore.sources import LEAST_IPV6_PREFIX


class SettingsError(Exception):
    """An operator's mistake in a setting; the message is the whole answer."""


def _whole(low: int, high: int | None = None) -> Callable[[str, object], int]:
    def parse(name: str, raw: object) -> int:
        value: int | None = None
        if isinstance(raw, int) and not isinstance(raw, bool):
            value = raw
        elif isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
            value = int(raw)
        if value is None or value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high is not None else f"{low} or more"
            raise SettingsError(f"{name} must be a whole number {bound} (got {raw!r})")
        return value
    return parse


def _internal_location(name: str, raw: object) -> str:
    """A proxy's internal location for X-Accel-Redirect: a path that starts and ends with
    "/" (the file's folder and name are appended)."""
    text = str(raw)
    if not (text.startswith("/") and text.endswith("/")) or any(
            c.isspace() or ord(c) < 32 for c in text):
        raise SettingsError(f"{name} must be a path that starts and ends with / "
                            f"(got {text!r})")
    return text


def _url(name: str, raw: object) -> str:
    text = str(raw)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(f"{name} must be an http:// or https:// origin, like "
                            f"https://licore.example (got {text!r})")
    return text.rstrip("/")


def _origin(name: str, raw: object) -> str:
    """The public URL is an origin: a path the service is served under is LICORE_ROOT_PATH,
    so that links, redirects and cookies, which are paths, carry it too."""
    text = _url(name, raw)
    if urlsplit(text).path not in ("", "/") or urlsplit(text).query:
        raise SettingsError(f"{name} must be an origin without a path, like "
                            f"https://licore.example; to serve under a path, set "
                            f"LICORE_ROOT_PATH (got {text!r})")
    return text


_PATH_SEGMENT = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@%-]+")


def _root_path(name: str, raw: object) -> str:
    """`/licensing` or `/a/b`, without a trailing slash; `/` or empty is the top of the host."""
    text = str(raw).strip().rstrip("/")
    segments = text.split("/")
    if text and (segments[0] != "" or not all(
            _PATH_SEGMENT.fullmatch(part) and part not in (".", "..") for part in segments[1:])):
        raise SettingsError(f"{name} must be a path like /licensing (got {str(raw)!r})")
    return text


def _issuer(name: str, raw: object) -> str:
    """An issuer is compared exactly with the ID token's `iss`, so its trailing slash stays."""
    text = str(raw)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(f"{name} must be the provider's issuer URL, like "
                            f"https://apis.roblox.com/oauth/ (got {text!r})")
    return text


def _text(name: str, raw: object) -> str:
    return str(raw).strip()


def _secret_text(name: str, raw: object) -> str:
    # Never echoed in an error: it is a secret.
    text = str(raw).strip()
    if not text:
        raise SettingsError(f"{name} is empty")
    return text


def _level(name: str, raw: object) -> str:
    text = str(raw).upper()
    if text not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise SettingsError(f"{name} must be one of DEBUG, INFO, WARNING, ERROR (got {raw!r})")
    return text


def database_url(name: str, raw: object) -> str:
    """Checked here so that a typo is one line at start, not a traceback from a driver."""
    text = str(raw)
    if text.startswith("sqlite:///"):
        path = Path(text.removeprefix("sqlite:///"))
        if text != "sqlite:///:memory:" and not path.parent.is_dir():
            raise SettingsError(f"{name}: the folder {str(path.parent)!r} for the SQLite file "
                                f"does not exist; create it or choose another path")
        return text
    if text.startswith(("postgresql://", "postgres://")):
        if not urlsplit(text).netloc and "host=" not in text:
            raise SettingsError(f"{name}: a PostgreSQL URL needs a host, like "
                                f"postgresql://user@localhost:5432/licore")
        return text
    shown = text.split("@")[-1]  # never echo a password that may precede '@'
    raise SettingsError(f"{name} must start with sqlite:/// or postgresql:// "
                        f"(got {shown!r})")


def _flag(name: str, raw: object) -> bool:
    text = str(raw).strip().lower()
    if isinstance(raw, bool):
        return raw
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise SettingsError(f"{name} must be true or false (got {raw!r})")


def _networks(name: str, raw: object) -> tuple[Network, ...]:
    text = ",".join(str(r) for r in raw) if isinstance(raw, list) else str(raw)
    try:
        return parse_networks(text)
    except ValueError as exc:
        raise SettingsError(f"{name}: {exc}; write comma-separated networks, like "
                            f"127.0.0.1/32,10.0.0.0/8") from None


@attrs.frozen
class Field:
    env: str  # LICORE_<env>; the TOML key is the same name in lower case
    parse: Callable[[str, object], Any]
    default: object


DEFAULTS = Settings()
FIELDS: tuple[Field, ...] = (
    Field("DATABASE_URL", database_url, "sqlite:///licore.db"),
    Field("DATA_DIR", lambda _n, raw: str(raw), "licore-data"),
    Field("PUBLIC_URL", _origin, None),
    # the path the service is served under behind a proxy (docs/operators.md, "Under a path")
    Field("ROOT_PATH", _root_path, ""),
    Field("LOG_LEVEL", _level, "INFO"),
    Field("PARTNER_RATE_LIMIT", _whole(1), DEFAULTS.partner_rate_limit),
    Field("RUNTIME_KEY_RATE_LIMIT", _whole(1), DEFAULTS.runtime_key_rate_limit),
    Field("RUNTIME_IP_RATE_LIMIT", _whole(1), DEFAULTS.runtime_ip_rate_limit),
    # the per-address limits count an IPv6 client by its network of this many bits
    Field("IPV6_PREFIX", _whole(LEAST_IPV6_PREFIX, 128), DEFAULTS.ipv6_prefix),
    Field("MAX_UPLOAD_BYTES", _whole(1024), DEFAULTS.max_upload_bytes),
    Field("DEVICE_LIFETIME", _whole(1, 86400), DEFAULTS.device_lifetime),
    Field("DEVICE_INTERVAL", _whole(1, 3600), DEFAULTS.device_interval),
    Field("SHUTDOWN_GRACE", _whole(0, 3600), 30),
    # seconds a request waits for a PostgreSQL connection while every pooled one is busy
    Field("DATABASE_BUSY_WAIT", _whole(1, 600), 30),
    # PostgreSQL connections a server process keeps for units of work, at most (the runtime
    # path keeps two more of its own)
    Field("DATABASE_POOL_SIZE", _whole(1, 100), 8),
    # a server or worker started before its PostgreSQL answers tries again after 1 s, then
    # twice as long each time, up to this many seconds
    Field("DATABASE_RETRY", _whole(1, 300), 15),
    # the kernel's queue of connections not yet accepted; it also caps at net.core.somaxconn
    Field("LISTEN_BACKLOG", _whole(1, 65535), 4096),
    # reverse proxies whose Forwarded / X-Forwarded-* headers name the real client
    Field("TRUSTED_PROXIES", _networks, ()),
    # The game platform (docs/platform.md): its public APIs, and sign-in with it when an
    # OAuth app is registered (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET both set).
    Field("PLATFORM_INVENTORY_URL", _url, "https://inventory.roblox.com"),
    Field("PLATFORM_USERS_URL", _url, "https://users.roblox.com"),
    Field("PLATFORM_TIMEOUT", _whole(1, 60), 5),
    Field("CLAIM_RATE_LIMIT", _whole(1), DEFAULTS.claim_rate_limit),
    Field("USAGE_RETENTION_DAYS", _whole(1, 36500), DEFAULTS.usage_retention_days),
    # days the audit trail keeps an entry (docs/audit.md); 0 keeps them for good
    Field("AUDIT_RETENTION_DAYS", _whole(0, 36500), DEFAULTS.audit_retention_days),
    Field("OIDC_ISSUER", _issuer, "https://apis.roblox.com/oauth/"),
    Field("OIDC_METADATA_URL", _url, None),
    Field("OIDC_CLIENT_ID", _text, None),
    Field("OIDC_CLIENT_SECRET", _secret_text, None),
    Field("OIDC_LABEL", _text, "Roblox"),
    # docs/events.md: the chat bot (its token from here or the environment, never argv)
    Field("CHAT_API_URL", _url, "https://discord.com/api/v10"),
    Field("CHAT_AUTHORIZE_URL", _url, "https://discord.com/oauth2/authorize"),
    Field("CHAT_BOT_TOKEN", _text, ""),
    Field("CHAT_CLIENT_ID", _text, ""),
    Field("CHAT_CLIENT_SECRET", _text, ""),
    Field("WEBHOOK_ALLOW_PRIVATE", _flag, False),
    Field("OUTBOX_RETRY_BASE", _whole(1, 3600), DEFAULTS.outbox.base),
    Field("OUTBOX_LEASE", _whole(1, 3600), DEFAULTS.outbox.lease),
    # the whole of one webhook send (look-up, connect, answer); the lease must outlast it
    Field("WEBHOOK_TIMEOUT", _whole(1, 300), 15),
    Field("OUTBOX_POLL_MS", _whole(10, 60000), 1000),
    # how often each delivery loop runs the scheduled sweeps (license expiry and reminders)
    Field("OUTBOX_SWEEP_MS", _whole(100, 60000), 20000),
    # delivery loops in each `licore serve` process; 0 leaves delivery to `licore worker`
    Field("OUTBOX_WORKERS", _whole(0, 64), 1),
    # sends in flight at once in each delivery loop (a hanging endpoint holds one)
    Field("OUTBOX_SLOTS", _whole(1, 256), 16),
    # one studio's sends in flight at once, across every loop and process
    Field("OUTBOX_STUDIO_SLOTS", _whole(1, 64), DEFAULTS.outbox.studio_slots),
    # processes protecting a big build's scripts at once (each `licore serve` process has
    # its own); empty: one per core, up to 8; 0 or 1: all in the serving process
    Field("PROTECT_PROCESSES", _whole(0, 64), None),
    Field("UPDATE_FILES_URL", _url, None),
    Field("UPDATE_FILES_ACCEL", _internal_location, None),
)


@attrs.frozen
class PlatformSettings:
    inventory_url: str
    users_url: str
    timeout: int
    oidc_issuer: str
    oidc_metadata_url: str | None
    oidc_client_id: str | None
    oidc_client_secret: str | None = attrs.field(repr=False)
    oidc_label: str = "Roblox"


@attrs.frozen
class EventSettings:
    """The chat bot and webhook sending (docs/events.md); secrets kept out of reprs."""

    chat_api_url: str
    chat_authorize_url: str
    chat_bot_token: str = attrs.field(repr=False)
    chat_client_id: str
    chat_client_secret: str = attrs.field(repr=False)
    webhook_allow_private: bool
    webhook_timeout: int
    poll_ms: int
    workers: int
    slots: int = 16
    sweep_ms: int = 20000


def _one_per_core() -> int:
    """LICORE_PROTECT_PROCESSES unset: a protection process per core, up to 8."""
    return min(os.cpu_count() or 1, 8)


@attrs.frozen
class ServerSettings:
    database_url: str
    data_dir: str
    public_url: str | None
    log_level: str
    shutdown_grace: int
    core: Settings
    events: EventSettings
    listen_backlog: int = 4096
    database_busy_wait: int = 30
    database_pool_size: int = 8
    database_retry: int = 15
    platform: PlatformSettings | None = None
    trusted_proxies: tuple[Network, ...] = ()
    root_path: str = ""
    protect_processes: int = attrs.field(factory=_one_per_core)


def _file_values(environ: Mapping[str, str]) -> dict[str, object]:
    given = environ.get("LICORE_CONFIG")
    path = Path(given) if given else Path("licore.toml")
    if not path.exists():
        if given:
            raise SettingsError(f"LICORE_CONFIG names {given!r}, which does not exist")
        return {}
    try:
        table = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: not a readable TOML file ({exc})") from None
    known = {f.env.lower() for f in FIELDS}
    unknown = sorted(set(table) - known)
    if unknown:
        raise SettingsError(f"{path}: unknown setting {unknown[0]!r}; known: "
                            f"{', '.join(sorted(known))}")
    return table


def load(environ: Mapping[str, str] | None = None) -> ServerSettings:
    env = os.environ if environ is None else environ
    from_file = _file_values(env)
    values: dict[str, Any] = {}
    for field in FIELDS:
        name = f"LICORE_{field.env}"
        if name in env and env[name] != "":
            values[field.env] = field.parse(name, env[name])
        elif field.env.lower() in from_file:
            values[field.env] = field.parse(field.env.lower(), from_file[field.env.lower()])
        else:
            values[field.env] = field.default
    public_url = values["PUBLIC_URL"]
    core = Settings(
        public_url=public_url or DEFAULTS.public_url,
        device_lifetime=values["DEVICE_LIFETIME"], device_interval=values["DEVICE_INTERVAL"],
        partner_rate_limit=values["PARTNER_RATE_LIMIT"],
        runtime_key_rate_limit=values["RUNTIME_KEY_RATE_LIMIT"],
        runtime_ip_rate_limit=values["RUNTIME_IP_RATE_LIMIT"],
        ipv6_prefix=values["IPV6_PREFIX"],
        max_upload_bytes=values["MAX_UPLOAD_BYTES"],
        claim_rate_limit=values["CLAIM_RATE_LIMIT"],
        usage_retention_days=values["USAGE_RETENTION_DAYS"],
        audit_retention_days=values["AUDIT_RETENTION_DAYS"],
        outbox=Schedule(base=values["OUTBOX_RETRY_BASE"], lease=values["OUTBOX_LEASE"],
                        studio_slots=values["OUTBOX_STUDIO_SLOTS"]),
        update_files_url=values["UPDATE_FILES_URL"],
        update_files_accel=values["UPDATE_FILES_ACCEL"])
    events = EventSettings(
        chat_api_url=values["CHAT_API_URL"], chat_authorize_url=values["CHAT_AUTHORIZE_URL"],
        chat_bot_token=values["CHAT_BOT_TOKEN"], chat_client_id=values["CHAT_CLIENT_ID"],
        chat_client_secret=values["CHAT_CLIENT_SECRET"],
        webhook_allow_private=values["WEBHOOK_ALLOW_PRIVATE"],
        webhook_timeout=values["WEBHOOK_TIMEOUT"], poll_ms=values["OUTBOX_POLL_MS"],
        workers=values["OUTBOX_WORKERS"], slots=values["OUTBOX_SLOTS"],
        sweep_ms=values["OUTBOX_SWEEP_MS"])
    if values["OUTBOX_LEASE"] <= values["WEBHOOK_TIMEOUT"]:
        # A send still running when its lease ends could be taken and sent again at once.
        raise SettingsError(f"LICORE_OUTBOX_LEASE ({values['OUTBOX_LEASE']}) must be longer "
                            f"than LICORE_WEBHOOK_TIMEOUT ({values['WEBHOOK_TIMEOUT']})")
    if (values["OIDC_CLIENT_ID"] is None) != (values["OIDC_CLIENT_SECRET"] is None):
        raise SettingsError("LICORE_OIDC_CLIENT_ID and LICORE_OIDC_CLIENT_SECRET go together: "
                            "set both to offer sign-in with the platform, or neither")
    platform = PlatformSettings(
        inventory_url=values["PLATFORM_INVENTORY_URL"], users_url=values["PLATFORM_USERS_URL"],
        timeout=values["PLATFORM_TIMEOUT"], oidc_issuer=values["OIDC_ISSUER"],
        oidc_metadata_url=values["OIDC_METADATA_URL"],
        oidc_client_id=values["OIDC_CLIENT_ID"] or None,
        oidc_client_secret=values["OIDC_CLIENT_SECRET"], oidc_label=values["OIDC_LABEL"])
    return ServerSettings(database_url=values["DATABASE_URL"], data_dir=values["DATA_DIR"],
                          public_url=public_url, log_level=values["LOG_LEVEL"],
                          shutdown_grace=values["SHUTDOWN_GRACE"], core=core,
                          events=events, listen_backlog=values["LISTEN_BACKLOG"],
                          database_busy_wait=values["DATABASE_BUSY_WAIT"],
                          database_pool_size=values["DATABASE_POOL_SIZE"],
                          database_retry=values["DATABASE_RETRY"],
                          platform=platform, trusted_proxies=values["TRUSTED_PROXIES"],
                          root_path=values["ROOT_PATH"],
                          protect_processes=(_one_per_core() if values["PROTECT_PROCESSES"]
                                             is None else values["PROTECT_PROCESSES"]))
