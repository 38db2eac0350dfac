"""`licore`: serve the service, migrate, and the operator's verbs (contract section 2)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import getpass
import logging
import os
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from adapters_storage.probe import problem
from licore.errors import LicoreError
from licore.scopes import Permission
from licore.services import builds, operator
from licore.services.deps import Deps
from licore_cli import settings
from licore_cli.compose import deps_from_env, secret


class OperatorError(Exception):
    """A mistake the operator can fix; the message is the one line they see."""


def _with_deps(action: Callable[[Deps], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        loaded = settings.load()
        wrong = await problem(loaded.database_url)
        if wrong:
            raise OperatorError(wrong)
        deps = deps_from_env()
        try:
            await deps.storage.migrate()
            return await action(deps)
        finally:
            await deps.storage.close()

    return asyncio.run(run())


def _read_password(args: argparse.Namespace) -> str | None:
    if args.no_password:
        return None
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Again: "):
            raise SystemExit("the passwords differ")
        return first
    return sys.stdin.readline().rstrip("\n") or None


def _check_port_free(host: str, port: int) -> None:
    """Hypercorn would report a taken port as a traceback after start-up messages; ask first.
    SO_REUSEADDR as Hypercorn sets it, so a port left in TIME_WAIT does not count as taken."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise OperatorError(f"port {port} on {host} is already in use: stop the other "
                                    f"server or choose another --port") from None
            raise OperatorError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def cmd_serve(args: argparse.Namespace) -> None:
    from hypercorn.config import Config
    from hypercorn.run import run

    if args.workers < 1:
        raise OperatorError("--workers must be 1 or more")
    loaded = settings.load()
    os.environ["LICORE_PUBLIC_URL"] = (args.public_url or loaded.public_url
                                       or f"http://{args.host}:{args.port}")
    settings.load()  # the public URL given on the command line is checked like the others
    if args.only:
        unknown = set(args.only.split(",")) - {"partner", "auth", "runtime", "web"}
        if unknown:
            raise OperatorError(f"--only knows partner, auth, runtime and web, not "
                                f"{', '.join(sorted(unknown))}")
        os.environ["LICORE_ONLY"] = args.only
    _check_port_free(args.host, args.port)
    _with_deps(lambda deps: deps.storage.migrate())
    secret("session_key", 32)  # made here, before the workers start, so they share one
    if args.workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        # set before any worker imports prometheus_client, so /metrics sums all workers
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="licore-metrics-")
    config = Config()
    config.application_path = "licore_cli.asgi:app"
    config.bind = [f"{args.host}:{args.port}"]
    config.workers = 0 if args.workers <= 1 else args.workers
    config.accesslog = None  # licore writes its own access log, without secrets
    config.errorlog = logging.getLogger("hypercorn.error")  # JSON lines like ours
    config.backlog = 4096  # a burst of new connections waits in the kernel, not dropped
    config.graceful_timeout = loaded.shutdown_grace  # in-flight requests finish on SIGTERM
    from adapters_http.observability import configure_logging

    configure_logging(loaded.log_level)
    logging.getLogger("licore.serve").info(
        "licore serving on http://%s:%s", args.host, args.port,
        extra={"database": loaded.database_url.split("@")[-1], "workers": args.workers})
    raise SystemExit(run(config))


def cmd_migrate(args: argparse.Namespace) -> None:
    _with_deps(lambda deps: deps.storage.migrate())
    print("migrated")


def cmd_account_add(args: argparse.Namespace) -> None:
    password = _read_password(args)
    account = _with_deps(lambda d: operator.add_account(d, args.username, args.platform_id,
                                                         password))
    print(account.id)


def cmd_studio_add(args: argparse.Namespace) -> None:
    studio = _with_deps(lambda d: operator.add_studio(d, args.name, args.owner))
    print(studio.id)


def cmd_studio_collaborator(args: argparse.Namespace) -> None:
    perms = frozenset(p for p, on in ((Permission.MANAGE_PRODUCTS, args.manage_products),
                                      (Permission.MANAGE_LICENSES, args.manage_licenses)) if on)
    _with_deps(lambda d: operator.set_collaborator(d, args.studio, args.username, perms))
    print("ok")


def cmd_client_add(args: argparse.Namespace) -> None:
    client = _with_deps(lambda d: operator.add_client(d, args.name, args.description,
                                                      args.scopes))
    print(client.id)


def cmd_client_disable(args: argparse.Namespace) -> None:
    revoked = _with_deps(lambda d: operator.set_client_disabled(d, args.client_id, True))
    print(f"ok: {revoked} key(s) revoked")


def cmd_client_enable(args: argparse.Namespace) -> None:
    _with_deps(lambda d: operator.set_client_disabled(d, args.client_id, False))
    print("ok")




def cmd_trace(args: argparse.Namespace) -> None:
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OperatorError(f"cannot read {args.file}: {exc.strerror}") from None
    found = _with_deps(lambda d: builds.trace_leak(d, None, args.product, path.name, data))
    if found is None:
        raise SystemExit(f"licore: no license of product {args.product} matches {args.file}")
    print(found.license_id)
    for line in found.evidence:
        print(f"  {line}")


def _global_options() -> argparse.ArgumentParser:
    """Options every verb takes, before or after the verb (SUPPRESS keeps a value given
    before the verb when the verb's own parser does not see it again)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--database", default=argparse.SUPPRESS,
                        help="sqlite:///path.db or postgresql://... (default "
                             "sqlite:///licore.db, or LICORE_DATABASE_URL)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print results as JSON, for scripts")
    return common


class _Sub:
    """add_parser with the global options attached, at every level."""

    def __init__(self, action: Any, common: argparse.ArgumentParser) -> None:
        self.action = action
        self.common = common

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        made: argparse.ArgumentParser = self.action.add_parser(name, parents=[self.common],
                                                               **kwargs)
        return made

    def group(self, name: str, **kwargs: Any) -> _Sub:
        return _Sub(self.add_parser(name, **kwargs).add_subparsers(dest="verb", required=True),
                    self.common)


def parser() -> argparse.ArgumentParser:
    common = _global_options()
    p = argparse.ArgumentParser(prog="licore", description=__doc__, parents=[common])
    p.add_argument("--version", action="version", version=f"licore {version('licore')}")
    sub = _Sub(p.add_subparsers(dest="command", required=True), common)

    s = sub.add_parser("serve", help="run the service with Hypercorn")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--public-url", help="origin used in verification_uri")
    s.add_argument("--only", help="serve only these families: partner,auth,runtime,web")
    s.set_defaults(func=cmd_serve)

    sub.add_parser("migrate", help="apply database migrations").set_defaults(func=cmd_migrate)

    account = sub.group("account", help="people: local accounts")
    a = account.add_parser("add", help="add a local account (password from stdin or prompt)")
    a.add_argument("username")
    a.add_argument("--platform-id", required=True)
    a.add_argument("--no-password", action="store_true", help="an account without sign-in")
    a.set_defaults(func=cmd_account_add)

    studio = sub.group("studio", help="studios and their collaborators")
    st = studio.add_parser("add", help="add a studio owned by an account")
    st.add_argument("name")
    st.add_argument("--owner", required=True)
    st.set_defaults(func=cmd_studio_add)
    co = studio.add_parser("collaborator", help="add or change a collaborator")
    co.add_argument("studio")
    co.add_argument("username")
    co.add_argument("--manage-products", action="store_true")
    co.add_argument("--manage-licenses", action="store_true")
    co.set_defaults(func=cmd_studio_collaborator)

    client = sub.group("client", help="registered apps")
    c = client.add_parser("add", help="register an app; prints its client_id")
    c.add_argument("name")
    c.add_argument("--description", required=True)
    c.add_argument("--scopes", required=True, help='space-separated, e.g. "library:read"')
    c.set_defaults(func=cmd_client_add)
    d = client.add_parser("disable", help="disable an app and revoke every key it holds")
    d.add_argument("client_id")
    d.set_defaults(func=cmd_client_disable)
    e = client.add_parser("enable", help="let a disabled app start device flows again")
    e.add_argument("client_id")
    e.set_defaults(func=cmd_client_enable)

    t = sub.add_parser("trace", help="name the license a leaked script was made for")
    t.add_argument("file", help="a model file (.rbxm, .rbxmx, ...) or a .luau/.lua script")
    t.add_argument("--product", required=True, help="the product id whose licenses to try")
    t.set_defaults(func=cmd_trace)
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if getattr(args, "database", None):
        os.environ["LICORE_DATABASE_URL"] = args.database
    try:
        settings.load()  # every setting checked before any work starts
        args.func(args)
    except LicoreError as error:
        raise SystemExit(f"licore: {error.description}") from None
    except (OperatorError, settings.SettingsError) as error:
        raise SystemExit(f"licore: {error}") from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as error:
        if os.environ.get("LICORE_DEBUG"):
            raise
        raise SystemExit(f"licore: unexpected {type(error).__name__}; run again with "
                         f"LICORE_DEBUG=1 to see where") from None


if __name__ == "__main__":
    main()
