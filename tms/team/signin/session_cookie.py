"""The web session cookie: a server-side session that is stored only when it holds something, and
whose id is never one the client chose.

Litestar's own server-side backend stores a row for every response that passes through it (each
anonymous ``GET /login`` wrote a 14-day row) and keeps whatever id the ``tms_session`` cookie
presents, so an id planted in a victim's browser before login stayed the signed-in session
(session fixation). This backend:

- writes nothing for an empty session, and sets no cookie (CSRF has its own cookie);
- issues a fresh random id whenever it stores a session the presented id does not name in the
  store (an unknown id is never adopted), at every sign-in (``start_session``) and whenever
  ``user_id`` changes, deleting the old row;
- rewrites an unchanged session at most once a day, to slide its expiry, instead of on every page;
- names the session's user, device (user agent) and address in its row, and records when it was last
  used at most every five minutes (``tms.team.signin.sessions``), for ``/account/sessions``;
- never revives a session that was ended while a request of it was running (a password change, a
  deactivation, "end this session"): its rewrite finds no row, and the cookie is cleared instead;
- ends a session unused for ``[auth] session_idle_minutes`` (its expiry, ``[auth] session_days``, is
  the config's ``max_age``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from litestar.datastructures import Cookie, MutableScopeHeaders
from litestar.middleware.session.server_side import ServerSideSessionBackend, ServerSideSessionConfig
from litestar.types import Empty, Message, ScopeSession
from litestar.utils.dataclass import extract_dataclass_items

from tms.ids import iso, utc_now
from tms.state import Connection, config_of
from tms.team.signin.sessions import LAST_SEEN_EVERY, Client, SessionEntry, SQLiteSessionStore

SECOND_FACTOR = "second_factor"  # session key: the session proved its user's second factor

_LOADED = "tms_session_loaded"  # the SessionEntry of the presented id, or None
_ROTATE = "tms_session_rotate"
REFRESH_AFTER_SECONDS = 24 * 3600


class RotatingSessionBackend(ServerSideSessionBackend):
    async def load_from_connection(self, connection: Connection) -> dict[str, Any]:
        loaded: SessionEntry | None = None
        session_id = connection.cookies.get(self.config.key)
        if session_id and session_id != "null":
            store = _store(self, connection)
            loaded = await store.get_entry(session_id)
            if loaded is not None and _idle_too_long(connection, loaded.last_seen_at):
                await store.delete(session_id)  # the cookie is cleared on the way out
                loaded = None
            if loaded is not None:
                await store.touch(session_id, loaded.last_seen_at, client_of(connection))
        connection.scope[_LOADED] = loaded  # type: ignore[literal-required]
        return self.deserialize_data(loaded.value) if loaded is not None else {}

    async def store_in_message(self, scope_session: ScopeSession, message: Message, connection: Connection) -> None:
        scope = connection.scope
        store = _store(self, connection)
        headers = MutableScopeHeaders.from_message(message)
        presented = connection.cookies.get(self.config.key)
        loaded: SessionEntry | None = scope.get(_LOADED)  # type: ignore[assignment]
        params = dict(extract_dataclass_items(self.config, exclude_none=True, include=Cookie.__dict__.keys()))
        clear = Cookie(value="null", key=self.config.key, expires=0, **params).to_header(header="")
        if scope_session is Empty or not scope_session:
            if loaded is not None:
                await self.delete(presented, store=store)  # type: ignore[arg-type]
            if presented and presented != "null":
                headers.add("Set-Cookie", clear)
            return
        data = self.serialize_data(scope_session, scope)
        session_id = presented
        if (loaded is None or scope.get(_ROTATE)
                or self.deserialize_data(loaded.value).get("user_id") != _user_id(scope_session)):
            if loaded is not None:
                await self.delete(presented, store=store)  # type: ignore[arg-type]
            session_id = self.generate_session_id()
            await store.insert(session_id, data, self.config.max_age, user_id=_user_id(scope_session),
                               client=client_of(connection))
        elif data == loaded.value and not _due_for_refresh(loaded.expires_at, self.config.max_age):
            return  # unchanged and fresh: no write, no cookie
        elif not await store.update(session_id, data, self.config.max_age):  # type: ignore[arg-type]
            headers.add("Set-Cookie", clear)  # ended while this request ran: stays ended
            return
        headers.add("Set-Cookie", Cookie(value=session_id, key=self.config.key, **params).to_header(header=""))


def _store(backend: RotatingSessionBackend, connection: Connection) -> SQLiteSessionStore:
    store = backend.config.get_store_from_app(connection.scope["app"])
    assert isinstance(store, SQLiteSessionStore)
    return store


def client_of(connection: Connection) -> Client:
    return Client(connection.headers.get("user-agent", ""), connection.client.host if connection.client else "")


def current_session_key(connection: Connection) -> str | None:
    """The stored key of the session this request presented (None for an anonymous visitor)."""
    if connection.scope.get(_LOADED) is None:
        return None
    return connection.cookies.get("tms_session")


def start_session(connection: Connection, data: dict[str, Any]) -> None:
    """Signs a session in (login, setup): its data replaces the old session's, under a new id.

    A renewal for the same user (a password change, one's own role change) keeps the second factor
    the session had proved (``second_factor``); any other sign-in starts without it, so a user with
    two-factor is asked for a code before any page (``tms.team.signin.session``)."""
    old = connection.scope.get("session")
    if (isinstance(old, dict) and old.get(SECOND_FACTOR) and data.get("user_id")
            and old.get("user_id") == data.get("user_id") and SECOND_FACTOR not in data):
        data = {**data, SECOND_FACTOR: old[SECOND_FACTOR]}
    connection.scope["session"] = data
    connection.scope[_ROTATE] = True  # type: ignore[literal-required]


def _user_id(session: ScopeSession) -> Any:
    """The signed-in user of a session: a dict here (Litestar's type also allows structs)."""
    return session.get("user_id") if isinstance(session, dict) else None


def _idle_too_long(connection: Connection, last_seen_at: str | None) -> bool:
    """``[auth] session_idle_minutes``: last use is recorded every ``LAST_SEEN_EVERY``, so a session ends
    between N and N+5 minutes after its last request, never earlier."""
    minutes = int(config_of(connection).get("auth.session_idle_minutes"))
    if not minutes or not last_seen_at:
        return False
    return last_seen_at < iso(utc_now() - timedelta(minutes=minutes) - LAST_SEEN_EVERY)


def _due_for_refresh(expires_at: float | None, max_age: int | None) -> bool:
    if expires_at is None or max_age is None:
        return False
    return expires_at - time.time() < max_age - REFRESH_AFTER_SECONDS


@dataclass
class RotatingSessionConfig(ServerSideSessionConfig):
    _backend_class = RotatingSessionBackend
