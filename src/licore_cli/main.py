"""`licore`: serve the service, migrate, and the operator's verbs (contract section 2)."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from licore.errors import LicoreError
from licore.scopes import Permission
from licore.services import builds, operator
from licore.services.deps import Deps
from licore_cli.compose import DEFAULT_DATABASE, deps_from_env, secret


def _with_deps(action: Callable[[Deps], Awaitable[Any]]) -> Any:
    async def run() -> Any:
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


def cmd_serve(args: argparse.Namespace) -> None:
    from hypercorn.config import Config
    from hypercorn.run import run

    os.environ["LICORE_PUBLIC_URL"] = (args.public_url or os.environ.get("LICORE_PUBLIC_URL")
                                       or f"http://{args.host}:{args.port}")
    if args.only:
        os.environ["LICORE_ONLY"] = args.only
    _with_deps(lambda deps: deps.storage.migrate())
    secret("session_key", 32)  # made here, before the workers start, so they share one
    config = Config()
    config.application_path = "licore_cli.asgi:app"
    config.bind = [f"{args.host}:{args.port}"]
    config.workers = 0 if args.workers <= 1 else args.workers
    config.accesslog = None  # licore writes its own access log, without secrets
    config.errorlog = "-"
    print(f"licore serving on http://{args.host}:{args.port} "
          f"(database {os.environ.get('LICORE_DATABASE_URL', DEFAULT_DATABASE).split('@')[-1]})",
          file=sys.stderr, flush=True)
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
    data = path.read_bytes()
    found = _with_deps(lambda d: builds.trace_leak(d, None, args.product, path.name, data))
    if found.license_id is None:
        raise SystemExit("\n".join(
            [f"licore: cannot tell which license of product {args.product} "
             f"{args.file} was made for"] + [f"  {line}" for line in found.evidence]))
    print(found.license_id)
    for line in found.evidence:
        print(f"  {line}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="licore", description=__doc__)
    p.add_argument("--database", help=f"sqlite:///path.db or postgresql://... "
                   f"(default {DEFAULT_DATABASE}, or LICORE_DATABASE_URL)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="run the service with Hypercorn")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--workers", type=int, default=1)
    s.add_argument("--public-url", help="origin used in verification_uri")
    s.add_argument("--only", help="serve only these families: partner,auth,runtime,web")
    s.set_defaults(func=cmd_serve)

    sub.add_parser("migrate", help="apply database migrations").set_defaults(func=cmd_migrate)

    account = sub.add_parser("account").add_subparsers(dest="verb", required=True)
    a = account.add_parser("add", help="add a local account (password from stdin or prompt)")
    a.add_argument("username")
    a.add_argument("--platform-id", required=True)
    a.add_argument("--no-password", action="store_true", help="an account without sign-in")
    a.set_defaults(func=cmd_account_add)

    studio = sub.add_parser("studio").add_subparsers(dest="verb", required=True)
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

    client = sub.add_parser("client").add_subparsers(dest="verb", required=True)
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
    if args.database:
        os.environ["LICORE_DATABASE_URL"] = args.database
    try:
        args.func(args)
    except LicoreError as error:
        raise SystemExit(f"licore: {error.description}") from None


if __name__ == "__main__":
    main()
