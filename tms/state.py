"""The objects every request shares (database, config, ...), typed: what ``create_app`` puts in the
app's state and how handlers, guards and middleware reach them.

A route handler names them as parameters, ``db: DatabaseDep`` and ``config: ConfigDep``, and Litestar
injects them (``dependencies``, registered app-wide by ``create_app``); a page helper a handler calls takes
them as arguments (``db: Database`` first), never the request to fetch them from.

``db_of(connection)`` / ``config_of(connection)`` are only for code Litestar does not inject into:
guards (``def guard(connection, handler)``, e.g. ``page_guard``, ``metrics_guard``), middleware
(the sign-in page's SSO choices, ``tms.team.sso.web.login_choices``), and the session backend the guards
and the sign-in handlers share (``tms.team.signin.session``, ``tms.team.signin.session_cookie``).
``app_state(connection)`` reads the other keys (attachment store, login throttle, setup token, ...).
Litestar's ``State`` is a dict read by attribute (``Any`` to the type checker), and these give the keys
back typed. Never ``request.app.state.<key>``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import SkipValidation

# imported at run time (not only for the type checker): Litestar reads the providers' annotations
from tms.config import Config
from tms.db import Database

if TYPE_CHECKING:
    from tms.attachments.objects import AttachmentStore
    from tms.team.signin.throttle import LoginThrottle
    from tms.team.tokens.service import LastUsedTracker

# any request or websocket, whatever its user, auth and handler types
Connection = ASGIConnection[Any, Any, Any, Any]


class AppState(State):
    """The app's state with its keys declared; built once, by ``create_app``, with ``AppState.of``."""

    config: Config
    db: Database
    attachment_store: AttachmentStore  # where attachment bytes live (attachments.store), passed down explicitly
    token_usage: LastUsedTracker  # tokens' last use, written in batches
    login_throttle: LoginThrottle
    inflation_slots: asyncio.Semaphore  # gzip bodies inflated at once (tms.http.bodies)
    setup_token: str | None  # the one-time token of the first-run setup page
    setup_done: bool  # a user exists: the setup page is closed

    @classmethod
    def of(
        cls,
        *,
        config: Config,
        db: Database,
        attachment_store: AttachmentStore,
        token_usage: LastUsedTracker,
        login_throttle: LoginThrottle,
        inflation_slots: asyncio.Semaphore,
        setup_token: str | None,
    ) -> AppState:
        return cls(
            {
                "config": config,
                "db": db,
                "attachment_store": attachment_store,
                "token_usage": token_usage,
                "login_throttle": login_throttle,
                "inflation_slots": inflation_slots,
                "setup_token": setup_token,
                "setup_done": False,
            }
        )


def app_state(connection: Connection) -> AppState:
    # create_app is the one place that builds the app and its state (tests may stand in a namespace
    # with the keys they need), so this is a declaration to the type checker, not a runtime check
    return cast(AppState, connection.app.state)


def provide_db(state: State) -> Database:
    """The ``db`` dependency (Litestar ``Provide``): a handler that names a ``db: DatabaseDep`` parameter gets it."""
    return cast(AppState, state).db


def provide_config(state: State) -> Config:
    """The ``config`` dependency: a handler that names a ``config: ConfigDep`` parameter gets it."""
    return cast(AppState, state).config


# What a handler names to get them: ``db: DatabaseDep`` / ``config: ConfigDep``. Not validated (the
# values come from the app, not the request; ``Database`` is a Protocol msgspec cannot check).
DatabaseDep = NamedDependency[SkipValidation[Database]]
ConfigDep = NamedDependency[SkipValidation[Config]]


def dependencies() -> dict[str, Any]:
    """What ``create_app`` registers app-wide: ``Provide`` for the database and the settings."""
    return {"db": Provide(provide_db, sync_to_thread=False), "config": Provide(provide_config, sync_to_thread=False)}


def db_of(connection: Connection) -> Database:
    return app_state(connection).db


def config_of(connection: Connection) -> Config:
    return app_state(connection).config
