"""`licore`: serve the service, migrate, and the operator's verbs (docs/operators.md)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import getpass
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters_storage.probe import problem
from licore.errors import LicoreError
from licore_cli import kek, settings

if TYPE_CHECKING:
    from licore.audit import Actor, AuditEntry
    from licore.model import Account, Client
    from licore.services.deps import Deps
    from licore.services.wiring import UseCases

# The core's use cases, the adapters and the server are imported by the verbs that use them:
# `licore --help`, a mistyped setting or `licore backup` start without them.


class OperatorError(Exception):
    """A mistake the operator can fix; the message is the one line they see."""


def _with_deps(action: Callable[[Deps], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        loaded = settings.load()
        wrong = await problem(loaded.database_url)
        if wrong:
            raise OperatorError(wrong)
        from licore_cli.compose import deps_from_env

        deps = deps_from_env()
        try:
            await deps.storage.migrate()
            # before anything reads or seals a key: the key-encryption key is the database's
            await kek.check(deps)
            return await action(deps)
        finally:
            await deps.storage.close()

    return asyncio.run(run())


def _operator() -> Actor:
    """Who the audit trail names for a verb: the operator, by their login name."""
    from licore.audit import Actor, ActorKind

    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a bare container)
        name = "operator"
    return Actor(ActorKind.OPERATOR, name)


def _with_use_cases(action: Callable[[UseCases], Awaitable[Any]]) -> Any:
    from licore.audit import acting
    from licore.services.wiring import UseCases

    async def as_operator(deps: Deps) -> Any:
        with acting(_operator()):
            return await action(UseCases.of(deps))

    return _with_deps(as_operator)


def _read_password(args: argparse.Namespace) -> str | None:
    """The password typed at a prompt or piped on stdin. Nothing (an empty line, or stdin
    at its end, as from </dev/null) is refused: an account without a password is only ever
    asked for by name, with --no-password."""
    if args.no_password:
        return None
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Again: "):
            raise OperatorError("the passwords differ; nothing was changed")
    else:
        first = sys.stdin.readline().rstrip("\r\n")
    if not first:
        raise OperatorError("no password given (type it at the prompt or pipe it on stdin); "
                            "for an account that cannot sign in, pass --no-password")
    return first


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
    metrics_dir: str | None = None
    if args.workers > 1 and "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        # Set before this process imports prometheus_client (with licore_cli.compose, in
        # _serve), as the workers it forks inherit its metrics: so /metrics sums all workers.
        assert "prometheus_client" not in sys.modules, "imported before its folder was set"
        metrics_dir = tempfile.mkdtemp(prefix="licore-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        code = _serve(args, loaded)
    finally:
        if metrics_dir is not None:  # ours, made above: one per serve, so remove it
            shutil.rmtree(metrics_dir, ignore_errors=True)
    raise SystemExit(code)


def _serve(args: argparse.Namespace, loaded: settings.ServerSettings) -> int:
    from hypercorn.config import Config
    from hypercorn.run import run

    from adapters_http.observability import configure_logging
    from licore.services.operator import FIRST_ACCOUNT_COMMAND
    from licore_cli.compose import secret

    configure_logging(loaded.log_level)
    late = asyncio.run(problem(loaded.database_url)) if kek.waits_for(
        loaded.database_url) else None
    if late:  # each worker waits for it, and says so (licore_cli.late_database)
        logging.getLogger("licore.serve").warning(
            "%s; serving all the same: /readyz and every call answer 503 until it does", late)
    no_accounts = not late and not _with_use_cases(lambda u: u.operator.accounts())
    secret("session_key", 32)  # made here, before the workers start, so they share one
    config = Config()
    config.application_path = "licore_cli.asgi:app"
    config.bind = [f"{args.host}:{args.port}"]
    config.workers = 0 if args.workers <= 1 else args.workers
    config.accesslog = None  # licore writes its own access log, without secrets
    config.errorlog = logging.getLogger("hypercorn.error")  # JSON lines like ours
    config.backlog = loaded.listen_backlog  # a burst of connections waits, is not dropped
    config.graceful_timeout = loaded.shutdown_grace  # in-flight requests finish on SIGTERM
    # Hypercorn's idle timer also runs between accepting a connection and reading its
    # request: at 5 s, a busy worker's burst of new connections was dropped unanswered.
    config.keep_alive_timeout = 75
    if no_accounts:
        # There is no sign-up: an empty install's operator has to be told where to start.
        logging.getLogger("licore.serve").info(
            "no account yet: make the first with `%s` (it asks for a password), then sign "
            "in at %s%s/signin", FIRST_ACCOUNT_COMMAND, os.environ["LICORE_PUBLIC_URL"],
            loaded.root_path)
    logging.getLogger("licore.serve").info(
        "licore serving on http://%s:%s", args.host, args.port,
        extra={"database": loaded.database_url.split("@")[-1], "workers": args.workers})
    if config.workers == 0:
        code = int(run(config))  # one process: Hypercorn drains on SIGTERM itself
    else:
        from licore_cli.supervisor import supervise

        code = supervise(config, args.workers)
    # the journal's record that it stopped, and when (SIGTERM, Ctrl-C, or workers dying)
    logging.getLogger("licore.serve").info("licore stopped", extra={"exit_status": code})
    return code


def cmd_worker(args: argparse.Namespace) -> None:
    """The outbox workers alone, without serving HTTP (docs/events.md)."""
    from adapters_http.observability import configure_logging
    from licore_cli.worker import work_forever

    loaded = settings.load()
    configure_logging(loaded.log_level)
    if args.concurrency < 1:
        raise OperatorError("--concurrency must be 1 or more")

    from licore.services.wiring import UseCases

    async def run(deps: Deps) -> None:
        uses = UseCases.of(deps)
        delivery = uses.delivery
        await asyncio.gather(*(work_forever(delivery, loaded.events.poll_ms / 1000,
                                            slots=loaded.events.slots,
                                            scheduled=uses.lifecycle.sweep_expiries,
                                            schedule_every=loaded.events.sweep_ms / 1000)
                               for _ in range(args.concurrency)))

    if kek.waits_for(loaded.database_url):  # started before its database: wait for it
        from licore_cli.late_database import until_prepared

        asyncio.run(until_prepared())
    logging.getLogger("licore.serve").info("licore worker delivering the outbox")
    _with_deps(run)


def cmd_migrate(args: argparse.Namespace) -> None:
    if args.check:
        from licore_cli.migrate_check import check

        url = settings.load().database_url
        wrong = asyncio.run(problem(url))
        if wrong:
            raise OperatorError(wrong)
        value, text = asyncio.run(check(url))
        _emit(args, value, text)
        return
    _with_deps(lambda deps: deps.storage.migrate())
    print("migrated")


def _emit(args: argparse.Namespace, value: object, text: str) -> None:
    """`value` as JSON with --json (for scripts), else `text` (for people)."""
    if getattr(args, "json", False):
        print(json.dumps(value, ensure_ascii=False, indent=2))
    elif text:
        print(text)


def _account(a: Account) -> dict[str, object]:
    return {"id": a.id, "username": a.username, "platform_id": a.platform_id,
            "can_sign_in": a.password_digest is not None and a.disabled_at is None,
            "disabled": a.disabled_at is not None}


def _client(c: Client) -> dict[str, object]:
    return {"id": c.id, "name": c.name, "description": c.description,
            "scopes": list(c.scopes), "disabled": c.disabled}


def cmd_account_add(args: argparse.Namespace) -> None:
    password = _read_password(args)
    account = _with_use_cases(lambda u: u.operator.add_account(args.username, args.platform_id,
                                                               password))
    _emit(args, _account(account), account.id)


def cmd_account_list(args: argparse.Namespace) -> None:
    accounts = _with_use_cases(lambda u: u.operator.accounts())
    _emit(args, [_account(a) for a in accounts], "\n".join(
        f"{a.id}  {a.username}  platform {a.platform_id}"
        f"{'' if a.password_digest else '  (no password)'}"
        f"{'  (disabled)' if a.disabled_at is not None else ''}" for a in accounts))


def cmd_account_disable(args: argparse.Namespace) -> None:
    revoked = _with_use_cases(lambda u: u.operator.set_account_disabled(args.username, True))
    _emit(args, {"revoked_keys": revoked}, f"ok: {revoked} key(s) revoked")


def cmd_account_enable(args: argparse.Namespace) -> None:
    _with_use_cases(lambda u: u.operator.set_account_disabled(args.username, False))
    _emit(args, {}, "ok")


def cmd_account_password(args: argparse.Namespace) -> None:
    password = _read_password(args)
    account = _with_use_cases(lambda u: u.operator.set_password(args.username, password))
    _emit(args, _account(account), "ok" if password else "ok: the account cannot sign in")


def cmd_studio_add(args: argparse.Namespace) -> None:
    studio = _with_use_cases(lambda u: u.operator.add_studio(args.name, args.owner))
    _emit(args, {"id": studio.id, "name": studio.name}, studio.id)


def cmd_studio_list(args: argparse.Namespace) -> None:
    studios = _with_use_cases(lambda u: u.operator.studios())
    value = [{"id": st.id, "name": st.name, "members": [
        {**_account(a), "owner": a.id == st.owner_account_id,
         "permissions": sorted(p.value for p in m.permissions)} for a, m in members]}
        for st, members in studios]
    lines = []
    for st, members in studios:
        lines.append(f"{st.id}  {st.name}")
        for a, m in members:
            role = "owner" if a.id == st.owner_account_id else ", ".join(
                sorted(p.value for p in m.permissions)) or "no permissions"
            lines.append(f"    {a.id}  {a.username}  ({role})")
    _emit(args, value, "\n".join(lines))


def cmd_studio_collaborator(args: argparse.Namespace) -> None:
    from licore.scopes import Permission

    perms = frozenset(p for p, on in ((Permission.MANAGE_PRODUCTS, args.manage_products),
                                      (Permission.MANAGE_LICENSES, args.manage_licenses)) if on)
    _with_use_cases(lambda u: u.operator.set_collaborator(args.studio, args.username, perms))
    print("ok")


def cmd_studio_remove_collaborator(args: argparse.Namespace) -> None:
    revoked = _with_use_cases(lambda u: u.operator.remove_collaborator(args.studio,
                                                                       args.username))
    _emit(args, {"revoked_keys": revoked}, f"ok: {revoked} studio key(s) revoked")


def cmd_client_add(args: argparse.Namespace) -> None:
    client = _with_use_cases(lambda u: u.operator.add_client(args.name, args.description,
                                                             args.scopes))
    _emit(args, _client(client), client.id)


def cmd_audit(args: argparse.Namespace) -> None:
    from adapters_http.wire import audit_entry
    from licore.commands import ListAudit, Paging

    command = ListAudit(args.action, args.actor, args.subject, page=Paging(args.limit))
    found = _with_use_cases(lambda u: u.operator.audit(args.studio, command)).items
    _emit(args, [{**audit_entry(e), "studio_id": e.studio_id} for e in found],
          "\n".join(_audit_line(e) for e in found))


def _audit_line(e: AuditEntry) -> str:
    who = f"{e.actor.kind.value} {e.actor.id}" + (f" (key {e.actor.key_id})"
                                                  if e.actor.key_id else "")
    told = "; ".join(f"{c.field}: {c.old} -> {c.new}" if c.shown else f"{c.field} changed"
                     for c in e.changes)
    return f"{e.id}  {e.action}  by {who}  {e.subject_type} {e.subject_id}  {told}".rstrip()


def cmd_client_list(args: argparse.Namespace) -> None:
    clients = _with_use_cases(lambda u: u.operator.clients())
    _emit(args, [_client(c) for c in clients], "\n".join(
        f"{c.id}  {c.name}{'  (disabled)' if c.disabled else ''}  scopes: {' '.join(c.scopes)}"
        for c in clients))


def cmd_client_update(args: argparse.Namespace) -> None:
    if args.name is None and args.description is None and args.scopes is None:
        raise OperatorError("say what to change: --name, --description or --scopes")
    client = _with_use_cases(lambda u: u.operator.change_client(
        args.client_id, name=args.name, description=args.description, scope_text=args.scopes))
    _emit(args, _client(client), "ok")


def cmd_client_disable(args: argparse.Namespace) -> None:
    revoked = _with_use_cases(lambda u: u.operator.set_client_disabled(args.client_id, True))
    print(f"ok: {revoked} key(s) revoked")


def cmd_client_enable(args: argparse.Namespace) -> None:
    _with_use_cases(lambda u: u.operator.set_client_disabled(args.client_id, False))
    print("ok")




def cmd_backup(args: argparse.Namespace) -> None:
    from adapters_storage.backup import BackupFailed, backup

    url = settings.load().database_url
    if not url.startswith("sqlite:"):  # (probing a SQLite path would create the file)
        wrong = asyncio.run(problem(url))
        if wrong:
            raise OperatorError(wrong)
    target = Path(args.path)
    try:
        kind = backup(url, target)
    except BackupFailed as failed:
        raise OperatorError(str(failed)) from None
    _emit(args, {"path": str(target), "kind": kind},
          f"backed up to {target} ({kind}).\nKeep the key-encryption key too, apart from "
          f"this file ({kek.source()}): without it no license key in the backup can be "
          f"opened.")


def cmd_kek_rotate(args: argparse.Namespace) -> None:
    from licore_cli import kek_rotate

    if args.batch < 1:
        raise OperatorError("--batch must be 1 or more")
    url = settings.load().database_url
    wrong = asyncio.run(problem(url))
    if wrong:
        raise OperatorError(wrong)
    try:
        kek_rotate.report(kek_rotate.run(args.batch))
    except kek_rotate.RotationRefused as refused:
        raise OperatorError(str(refused)) from None


def cmd_trace(args: argparse.Namespace) -> None:
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OperatorError(f"cannot read {args.file}: {exc.strerror}") from None
    found = _with_use_cases(lambda u: u.copies.trace(None, args.product, path.name, data))
    # A key in a copy is never what names a license (anyone who saw it can paste it into
    # their own leak): its license is listed apart, as possibly planted.
    planted = ([f"possibly planted (its key or sealed program appears, no mark names it): "
                f"{', '.join(found.possibly_planted)}"] if found.possibly_planted else [])
    if found.license_id is None:
        raise SystemExit("\n".join(
            [f"licore: cannot tell which license of product {args.product} "
             f"{args.file} was made for"] + [f"  {line}" for line in found.evidence]
            + planted))
    print(found.license_id)
    for line in found.evidence:
        print(f"  {line}")
    for line in planted:
        print(line)


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
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; 0.0.0.0 for every one)")
    s.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    s.add_argument("--workers", type=int, default=1,
                   help="server processes sharing the port (default 1; about one per core)")
    s.add_argument("--public-url", help="origin used in verification_uri")
    s.add_argument("--only", help="serve only these families: partner,auth,runtime,web")
    s.set_defaults(func=cmd_serve)

    mig = sub.add_parser("migrate", help="apply database migrations")
    mig.add_argument("--check", action="store_true", help="change nothing: say which "
                     "migrations an upgrade to this release applies, and of which kind")
    mig.set_defaults(func=cmd_migrate)
    w = sub.add_parser("worker", help="deliver the outbox (webhooks, chat roles) without "
                       "serving HTTP; `serve` runs the same workers")
    w.add_argument("--concurrency", type=int, default=1, help="delivery loops to run")
    w.set_defaults(func=cmd_worker)

    account = sub.group("account", help="people: local accounts")
    a = account.add_parser("add", help="add a local account (password from stdin or prompt)")
    a.add_argument("username")
    a.add_argument("--platform-id", required=True)
    a.add_argument("--no-password", action="store_true", help="an account without sign-in")
    a.set_defaults(func=cmd_account_add)
    account.add_parser("list", help="every account with its id").set_defaults(
        func=cmd_account_list)
    pw = account.add_parser("password", help="set or reset a password (stdin or a prompt; "
                            "at least 10 characters)")
    pw.add_argument("username")
    pw.add_argument("--no-password", action="store_true",
                    help="remove the password: the account can no longer sign in")
    pw.set_defaults(func=cmd_account_password)
    dis = account.add_parser("disable", help="stop an account: no sign-in, its sessions end, "
                             "every key it approved is revoked")
    dis.add_argument("username")
    dis.set_defaults(func=cmd_account_disable)
    en = account.add_parser("enable", help="let a disabled account sign in again (its "
                            "revoked keys stay revoked)")
    en.add_argument("username")
    en.set_defaults(func=cmd_account_enable)

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
    studio.add_parser("list", help="every studio with its members and their permissions"
                      ).set_defaults(func=cmd_studio_list)
    rc = studio.add_parser("remove-collaborator", help="take an account out of a studio and "
                           "revoke the studio keys it approved there")
    rc.add_argument("studio")
    rc.add_argument("username")
    rc.set_defaults(func=cmd_studio_remove_collaborator)

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
    client.add_parser("list", help="every app with its id and scopes").set_defaults(
        func=cmd_client_list)
    u = client.add_parser("update", help="change an app's name, description or scopes")
    u.add_argument("client_id")
    u.add_argument("--name")
    u.add_argument("--description")
    u.add_argument("--scopes", help="the whole new registration, space-separated")
    u.set_defaults(func=cmd_client_update)

    au = sub.add_parser("audit", help="the audit trail, newest first: every studio's "
                        "changes and the operator's own (docs/audit.md)")
    au.add_argument("--studio", help="only this studio's (its name)")
    au.add_argument("--action", help="an action (license.revoked) or its family (license)")
    au.add_argument("--actor", help="an actor's kind (app, person, operator, platform, "
                    "service), id or key id")
    au.add_argument("--subject", help="a subject's type (license, product, ...) or id")
    au.add_argument("--limit", type=int, default=50, help="entries shown (1 to 1000)")
    au.set_defaults(func=cmd_audit)

    b = sub.add_parser("backup", help="copy the database while the server runs (SQLite's "
                       "online backup; PostgreSQL through pg_dump)")
    b.add_argument("path", help="a new file for the copy")
    b.set_defaults(func=cmd_backup)

    keys = sub.group("kek", help="the key-encryption key (docs/operators.md, \"Rotating the "
                     "key-encryption key\")")
    rot = keys.add_parser("rotate", help="re-seal every stored secret under the key in "
                          "LICORE_NEW_KEK, while servers keep serving; run again to resume")
    rot.add_argument("--batch", type=int, default=500, help="rows re-sealed a transaction")
    rot.set_defaults(func=cmd_kek_rotate)

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
    except (OperatorError, settings.SettingsError, kek.KeyMismatch) as error:
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
