"""tms: serve | admin | ingest. The only entry point.

Admin commands open the SQLite file directly (WAL + busy timeout + BEGIN IMMEDIATE), so they are
safe while ``tms serve`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import secrets
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from tms import __version__
from tms.config import Config, ConfigError, find_config_file, load_config

EXIT_USAGE = 2
EXIT_DATA_DIR = 1


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tms", description="Self-hosted test management service.")
    parser.add_argument("--config", metavar="FILE", help="config file (default: $TMS_CONFIG, else ./tms.toml)")
    parser.add_argument("--version", action="version", version=f"tms {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the service: API, web UI, webhook dispatcher, daily sweep")
    serve.add_argument("--host", help="address to listen on (overrides server.host)")
    serve.add_argument("--port", type=int, help="port to listen on (overrides server.port)")

    admin = commands.add_parser("admin", help="administer tenants, users and tokens on the database")
    admin_commands = admin.add_subparsers(dest="admin_command", required=True, metavar="ADMIN_COMMAND")
    tenant = admin_commands.add_parser("create-tenant", help="create a tenant; prints its id on the last line")
    tenant.add_argument("--name", required=True)
    user = admin_commands.add_parser("create-user", help="create a web user of a tenant")
    user.add_argument("--tenant", required=True, metavar="ID")
    user.add_argument("--email", required=True)
    password = user.add_mutually_exclusive_group(required=True)
    password.add_argument("--password")
    password.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    user.add_argument("--role", choices=("owner", "admin", "tester", "viewer"),
                      help="the user's role (default admin; the tenant's first user is always its owner)")
    token = admin_commands.add_parser("create-token", help="create an API token; prints it on the last line")
    token.add_argument("--tenant", required=True, metavar="ID")
    token.add_argument("--name", required=True)
    token.add_argument("--scopes", required=True, help="comma separated: read,write")
    status = admin_commands.add_parser("set-tenant-status", help="suspend (tokens and logins refused) or reactivate")
    status.add_argument("--tenant", required=True, metavar="ID")
    status.add_argument("--status", required=True, choices=("ACTIVE", "SUSPENDED"))
    unlock = admin_commands.add_parser("unlock-user", help="lift sign-in throttling for an account (every client)")
    unlock.add_argument("--email", required=True)
    two_factor = admin_commands.add_parser("two-factor", help="two-factor sign-in of an account")
    two_factor_commands = two_factor.add_subparsers(dest="two_factor_command", required=True, metavar="COMMAND")
    two_factor_reset = two_factor_commands.add_parser(
        "reset", help="remove an account's two-factor (lost device, no recovery code, no admin to reset it) and "
        "end its sessions; audited")
    two_factor_reset.add_argument("--email", required=True)

    backup = admin_commands.add_parser("backup", help="write a consistent copy of the SQLite database (safe while "
                                       "serve runs)")
    backup.add_argument("file", metavar="FILE", help="where to write the copy (replaced if it exists)")
    attachments = admin_commands.add_parser("attachments", help="attachment storage: migrate between the local "
                                            "folder and object storage (S3)")
    attachments_commands = attachments.add_subparsers(dest="attachments_command", required=True, metavar="COMMAND")
    migrate = attachments_commands.add_parser("migrate", help="copy every attachment object to the other store and "
                                              "verify it; resumable; names the setting to switch once all are copied")
    migrate.add_argument("--to", required=True, choices=("s3", "local"), dest="target")

    from tms.reporter.cli import add_ingest_arguments

    ingest = commands.add_parser("ingest", help="parse JUnit XML / Cucumber JSON reports and post one ingest")
    add_ingest_arguments(ingest)

    from tms.reporter.gate import add_quarantine_arguments

    quarantine = commands.add_parser("quarantine", help="quarantined tests of a project (a client of the API)")
    add_quarantine_arguments(quarantine)
    from tms.reporter.library import add_cases_arguments

    cases = commands.add_parser("cases", help="export or import a project's test cases (CSV, TestRail XML)")
    add_cases_arguments(cases)

    from tms.reporter.runs import add_run_arguments

    run = commands.add_parser("run", help="create a run for CI shards, and complete it after them")
    add_run_arguments(run)

    from tms.mcp.cli import add_mcp_arguments

    mcp = commands.add_parser("mcp", help="MCP server on stdio: AI assistants read and write the library "
                                          "through the API")
    add_mcp_arguments(mcp)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command == "ingest":
        # the reporter is a client: it needs no server config and imports nothing of the server
        from tms.reporter.cli import run_ingest

        return run_ingest(args)
    if args.command == "quarantine":
        from tms.reporter.gate import run_quarantine

        return run_quarantine(args)
    if args.command == "cases":
        from tms.reporter.library import run_cases

        return run_cases(args)
    if args.command == "run":
        from tms.reporter.runs import run_run

        return run_run(args)
    if args.command == "mcp":
        # a client of the API like ingest: no server config, no database
        from tms.mcp.cli import run_mcp

        return run_mcp(args)
    try:
        config = load_config(find_config_file(args.config))
    except ConfigError as exc:
        print(f"tms: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for warning in config.warnings:
        print(f"tms: config warning: {warning}", file=sys.stderr)
    if args.command == "serve":
        return _serve(config, args)
    return _admin(config, args)


def _serve(config: Config, args: argparse.Namespace) -> int:
    import uvicorn

    from tms.app import create_app

    try:
        if args.host:
            config = config.with_overrides(server__host=args.host)
        if args.port is not None:
            config = config.with_overrides(server__port=args.port)
    except ConfigError as exc:
        print(f"tms: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    config = config.with_derived_base_url()
    problem = data_dir_problem(config)
    if problem:
        print(f"tms: {problem}", file=sys.stderr)
        return EXIT_DATA_DIR
    # SQLite calls run on aiosqlite's threads: with the default 5 ms GIL switch interval a busy event
    # loop makes each finished query wait for the GIL; a shorter interval hands it over sooner.
    sys.setswitchinterval(0.0005)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from tms.attachments.service import store_problem

    problem = store_problem(config)  # wrong S3 credentials: one line naming the setting, before anything starts
    if problem:
        print(f"tms: config error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    # replicas on PostgreSQL share the data dir (attachments) on purpose; on SQLite one process owns it
    instance_lock = True if config.database_url else _lock_data_dir(config)
    if instance_lock is None:
        return 1
    # offered only if the database turns out to have no user yet (the app checks once it is open)
    app = create_app(config, setup_token=secrets.token_urlsafe(24))
    host, port = config.get("server.host"), config.get("server.port")
    where = "PostgreSQL" if config.database_url else "SQLite"
    print(f"tms: data in {config.data_dir.resolve()} ({where}), listening on http://{host}:{port} "
          f"(config: {config.source}); links name {config.base_url}; Ctrl-C stops it", flush=True)
    if host in ("127.0.0.1", "localhost", "::1"):
        print("tms: only this machine can connect; for teammates start it with TMS_SERVER_HOST=0.0.0.0 "
              "(and TMS_SERVER_BASE_URL=http://<this host>:PORT if they know it by another name)", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False,
                timeout_graceful_shutdown=10)
    return 0


def data_dir_problem(config: Config) -> str | None:
    """Why the service could not store data in ``storage.data_dir``, checked before it starts: a
    read-only directory otherwise failed inside the app's start-up with a traceback."""
    directory = config.data_dir
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".tms-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        for path in (config.db_path, config.db_path.with_name("tms.db-wal"), config.attachments_dir):
            if path.exists() and not os.access(path, os.W_OK):
                raise PermissionError(errno.EACCES, "read-only", str(path))
    except OSError as exc:
        where = exc.filename or directory
        return (f"cannot write to the data directory {directory.resolve()} ({where}: "
                f"{exc.strerror or exc}); set storage.data_dir or TMS_STORAGE_DATA_DIR to a writable directory")
    return None


def _lock_data_dir(config: Config) -> Any:
    """Holds ``data_dir/tms.lock`` for the life of the process; None when another serve holds it.

    With SQLite, one process owns the data dir: a second one would run its own webhook dispatcher
    and periodic jobs, so every event would be delivered once per process. The lock is released by
    the kernel when the process ends, however it ends (kill -9 included).
    """
    import fcntl

    lock_path = config.data_dir / "tms.lock"
    try:
        config.data_dir.mkdir(parents=True, exist_ok=True)
        handle = lock_path.open("a+")
    except OSError as exc:
        print(f"tms: cannot use data dir {config.data_dir.resolve()}: {exc.strerror}", file=sys.stderr)
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        print(f"tms: another tms serve already uses the data dir {config.data_dir.resolve()} "
              f"(it holds {lock_path.name}); stop it first", file=sys.stderr)
        return None
    return handle


def _admin(config: Config, args: argparse.Namespace) -> int:
    from tms.errors import DomainError

    try:
        if args.admin_command == "create-tenant":
            print(_run_with_db(config, lambda db: _create_tenant(db, args.name)))
        elif args.admin_command == "create-user":
            password = sys.stdin.readline().rstrip("\r\n") if args.password_stdin else args.password
            print(_run_with_db(config, lambda db: _create_user(db, args.tenant, args.email, password,
                                                                     args.role)))
        elif args.admin_command == "create-token":
            print(_run_with_db(config, lambda db: _create_token(db, args.tenant, args.name, args.scopes)))
        elif args.admin_command == "set-tenant-status":
            print(_run_with_db(config, lambda db: _set_tenant_status(db, args.tenant, args.status)))
        elif args.admin_command == "backup":
            return _backup(config, args.file)
        elif args.admin_command == "unlock-user":
            print(_run_with_db(config, lambda db: _unlock_user(db, args.email)))
        elif args.admin_command == "two-factor":
            print(_run_with_db(config, lambda db: _reset_two_factor(db, args.email)))
        elif args.admin_command == "attachments":
            from tms.attachments.migrate import run as migrate_attachments

            code, message = asyncio.run(_with_db(config, lambda db: migrate_attachments(db, config, args.target)))
            print(message)
            return int(code)
    except DomainError as exc:
        print(f"tms: {exc.detail}", file=sys.stderr)
        return 1
    return 0


async def _unlock_user(db: Any, email: str) -> str:
    from tms.team.signin.throttle import unlock

    forgotten = await unlock(db, email)
    return f"sign-in for {email} is no longer throttled ({forgotten} failed attempts forgotten)"


async def _reset_two_factor(db: Any, email: str) -> str:
    from tms.team.signin import two_factor

    return await two_factor.reset_by_email(db, email)


def _backup(config: Config, file: str) -> int:
    from pathlib import Path

    from tms.db.sqlite import backup_database

    if config.database_url:
        print("tms: admin backup copies the SQLite database; back PostgreSQL up with pg_dump "
              "(see docs/deployment.md)", file=sys.stderr)
        return 1
    try:
        size = backup_database(config.db_path, Path(file))
    except (OSError, sqlite3.Error) as exc:
        print(f"tms: backup failed: {exc}", file=sys.stderr)
        return 1
    print(f"backed up {config.db_path} to {file} ({size} bytes)")
    return 0


async def _with_db(config: Config, action: Callable[[Any], Awaitable[Any]]) -> Any:
    from tms.db import opened

    async with opened(config) as db:
        return await action(db)


def _run_with_db(config: Config, action: Callable[[Any], Awaitable[str]]) -> str:
    from tms.db import opened

    async def run() -> str:
        async with opened(config) as db:
            return await action(db)

    return asyncio.run(run())


async def _create_tenant(db: Any, name: str) -> str:
    from tms.team import accounts

    return await accounts.create_tenant(db, name)


async def _create_user(db: Any, tenant_id: str, email: str, password: str, role: str | None) -> str:
    from tms.team import accounts
    from tms.team import store as user_store

    user_id = await accounts.create_user(db, tenant_id, email, password, role)
    row = await user_store.get_user(db, user_id)
    return f"created user {email} ({user_id}) with role {row['role'] if row else role}"


async def _create_token(db: Any, tenant_id: str, name: str, scopes: str) -> str:
    from tms.team.tokens import service as tokens

    new = await tokens.create_token(db, tenant_id, name, scopes)
    print(f"token {new.name} ({', '.join(new.scopes)}); shown once, store it now:")
    return new.token


async def _set_tenant_status(db: Any, tenant_id: str, status: str) -> str:
    from tms.team.tenants import service as tenants

    await tenants.set_status(db, tenant_id, status)
    return f"tenant {tenant_id} is now {status}"


if __name__ == "__main__":
    raise SystemExit(main())
