"""The composition root: the one place that knows every adapter and wires them together, and
the one place that builds the use cases the HTTP adapter is given."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters_crypto import AesGcmKeyVault, Argon2Passwords, SystemClock, SystemRandom
from adapters_formats.zstd_text import ZstdText
from adapters_storage import open_storage
from adapters_storage.update_file_store import DiskUpdateFiles
from licore.ports import ChatService, ImageCodec, ModelCodec, Platform, WebhookSender
from licore.protection import Protector
from licore.services.deps import Deps
from licore.storage_ports import Storage
from licore_cli import settings
from licore_cli.deferred import deferred
from licore_cli.single_flight import AsyncSingleFlight
from licore_cli.test_clock import shifted_clock

if TYPE_CHECKING:  # the HTTP side is imported by what serves (a verb needs only the core)
    from adapters_http.app import LicoreApp
    from adapters_http.web import WebConfig
    from licore.services.wiring import UseCases

log = logging.getLogger("licore.protection")


def secret(name: str, size: int) -> bytes:
    """A server secret from `LICORE_<NAME>` (hex), else a file in the data directory, made
    on first use with owner-only permissions. Never from the command line."""
    given = os.environ.get(f"LICORE_{name.upper()}")
    if given:
        return _hex_secret(given, size, f"LICORE_{name.upper()}")
    directory = Path(settings.load().data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if not path.exists() and _make_secret_file(path, size):
        MADE.add(path.resolve())
    return _hex_secret(path.read_text(), size, f"the file {path.resolve()}")


# Secret files this process made: one a start refused is removed again (licore_cli.kek), so
# the next start, with LICORE_KEK set, finds no stray key beside the data.
MADE: set[Path] = set()


def _make_secret_file(path: Path, size: int) -> bool:
    """Written whole under a name of its own, then linked to `path`: processes starting
    together (workers another ASGI server started, hosts sharing a data folder) see no file
    or the whole one, never an empty one just created (read as an empty key), and the
    first link wins."""
    draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(size))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            return False
        return True
    finally:
        draft.unlink()


def _hex_secret(text: str, size: int, where: str) -> bytes:
    try:
        value = bytes.fromhex(text.strip())
    except ValueError:
        value = b""
    if len(value) != size:
        # Never a shorter key: an empty session key would sign cookies anyone could forge.
        raise settings.SettingsError(f"{where} must hold {size} bytes written as "
                                     f"{2 * size} hex digits")
    return value


def previous_kek() -> bytes | None:
    """`LICORE_KEK_PREVIOUS`: the key a rotation replaces, held beside `LICORE_KEK` during
    its window (docs/operators.md, "Rotating the key-encryption key"). Environment only."""
    given = os.environ.get("LICORE_KEK_PREVIOUS")
    return _hex_secret(given, 32, "LICORE_KEK_PREVIOUS") if given else None


def storage_for(loaded: settings.ServerSettings) -> Storage:
    """The storage the settings name, with the operator's pool settings."""
    return open_storage(loaded.database_url, busy_wait=loaded.database_busy_wait,
                        pool_size=loaded.database_pool_size)


def deps_from_env() -> Deps:
    loaded = settings.load()
    # Secrets are read (or made) now, in the process that starts first, not at first use.
    watermark = secret("watermark", 32)
    return Deps(
        storage=storage_for(loaded),
        # Update files are kept on each host (any host remakes one it lacks from the
        # database), beside its other data, where a proxy may serve them (docs/runtime.md).
        update_files=DiskUpdateFiles(Path(loaded.data_dir) / "update-files"),
        compressor=ZstdText(),
        clock=shifted_clock() or SystemClock(),
        random=SystemRandom(),
        vault=AesGcmKeyVault(secret("kek", 32), previous=previous_kek()),
        passwords=Argon2Passwords(),
        models=deferred(_codec),
        protector=deferred(lambda: _protector(watermark, loaded.protect_processes)),
        images=deferred(_images),
        settings=loaded.core,
        offload=asyncio.to_thread,
        once=AsyncSingleFlight(),
        platform=deferred(lambda: _platform(loaded)),
        chat=deferred(lambda: _chat(loaded)),
        webhooks=deferred(lambda: _webhooks(loaded)),
    )


# The adapters below import what most processes never use (see licore_cli.deferred).

def _codec() -> ModelCodec:
    from adapters_formats.codec import RobloxModelCodec
    from licore_cli.model_checks import OffProcessChecks
    return OffProcessChecks(RobloxModelCodec())


def _images() -> ImageCodec:
    from adapters_formats.images import PillowImages
    return PillowImages()


def _protector(watermark: bytes, processes: int) -> Protector:
    from adapters_protection.processes import ProcessProtector
    return ProcessProtector(watermark, processes)


def _platform(loaded: settings.ServerSettings) -> Platform:
    from adapters_platform import Retry, RobloxPlatform
    platform = loaded.platform
    assert platform is not None  # load() always reads them
    return RobloxPlatform(inventory_url=platform.inventory_url, users_url=platform.users_url,
                          retry=Retry(timeout=float(platform.timeout)))


def _chat(loaded: settings.ServerSettings) -> ChatService:
    from adapters_events import ChatClient, ChatConfig
    events = loaded.events
    return ChatClient(ChatConfig(
        api_url=events.chat_api_url, authorize_url=events.chat_authorize_url,
        bot_token=events.chat_bot_token, client_id=events.chat_client_id,
        client_secret=events.chat_client_secret))


def _webhooks(loaded: settings.ServerSettings) -> WebhookSender:
    from adapters_events import SignedSender
    return SignedSender(allow_private=loaded.events.webhook_allow_private,
                        timeout=loaded.events.webhook_timeout)


# The parts of the service that make buyers' copies (downloads, /update).
_MAKE_COPIES = frozenset({"partner", "runtime", "web"})


async def warm_protection(deps: Deps, only: tuple[str, ...]) -> None:
    """Starts the protection worker processes of a serving process that makes copies, on a
    thread while it serves (docs/operators.md, "Protecting big builds")."""
    if _MAKE_COPIES.isdisjoint(only):
        return
    try:
        warm = getattr(deps.protector, "warm", None)  # the deferred protector is made here
        if callable(warm):
            await asyncio.to_thread(warm)
    except Exception as exc:  # the first big build starts them instead: no reason to stop
        log.warning("protection workers could not start early: %s", type(exc).__name__)


def app_of(deps: Deps, only: tuple[str, ...] | None = None, web: WebConfig | None = None,
           background: Sequence[Callable[[UseCases], Coroutine[Any, Any, None]]] = ()
           ) -> LicoreApp:
    """The ASGI application over the parts chosen: the use cases built once from them, and
    given to the HTTP adapter with the settings. `background`: long-running tasks started
    with the application (the outbox workers), each given the same use cases."""
    from adapters_http.app import FAMILIES, create_app
    from licore.services.wiring import UseCases

    uc = UseCases.of(deps)

    def started(run: Callable[[UseCases], Coroutine[Any, Any, None]]
                ) -> Callable[[], Coroutine[Any, Any, None]]:
        return lambda: run(uc)

    return create_app(uc, deps.settings, only=FAMILIES if only is None else only, web_config=web,
                      background=[started(run) for run in background])


def web_config() -> WebConfig:
    """Every process serving the pages signs session cookies with one key; people sign in
    with local accounts, and with the platform when its OAuth app is configured."""
    from adapters_http.web import PlatformSignInConfig, WebConfig

    platform = settings.load().platform
    sso = None
    if platform is not None and platform.oidc_client_id and platform.oidc_client_secret:
        sso = PlatformSignInConfig(
            client_id=platform.oidc_client_id, client_secret=platform.oidc_client_secret,
            issuer=platform.oidc_issuer, metadata_url=platform.oidc_metadata_url,
            label=platform.oidc_label)
    return WebConfig(session_key=secret("session_key", 32), platform_sign_in=sso)
