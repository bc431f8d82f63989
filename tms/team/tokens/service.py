"""API tokens: ``svc_<prefix>_<secret>``; the secret is kept only as its SHA-256 digest.

A token is 40 random base62 characters (~238 bits), so a fast digest compared in constant time is
as safe as a slow hash and cannot be used to exhaust the CPU with bogus tokens.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import string
import time
from dataclasses import dataclass

from tms.db import AUTH_SIGNAL, Database, Row, Transaction
from tms.errors import InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.team.audit import service as audit
from tms.team.tenants import store as tenant_store
from tms.team.tokens import store as token_store

# scim: the SCIM 2.0 provisioning endpoints (/scim/v2) alone; read and write do not reach them
SCOPES = ("read", "write", "scim")
PREFIX_LENGTH = 8
SECRET_LENGTH = 40
_PREFIX_ALPHABET = string.ascii_lowercase + string.digits
_SECRET_ALPHABET = string.ascii_letters + string.digits
TOKEN_PATTERN = re.compile(r"^svc_([a-z0-9]{8})_([A-Za-z0-9]{32,128})$")


@dataclass(frozen=True, slots=True)
class ApiPrincipal:
    """Who presented a valid token: the request's tenant and granted scopes."""

    token_id: str
    tenant_id: str
    tenant_name: str
    tenant_status: str
    scopes: frozenset[str]
    token_name: str = ""


@dataclass(frozen=True, slots=True)
class NewToken:
    id: str
    name: str
    prefix: str
    scopes: list[str]
    token: str  # shown once, never stored


def parse_scopes(raw: str | list[str]) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else raw
    requested = {item.strip().lower() for item in items if item.strip()}
    unknown = sorted(requested - set(SCOPES))
    if unknown:
        raise InvalidInput(f"unknown scope {unknown[0]!r}; allowed: {', '.join(SCOPES)}", field="scopes")
    if not requested:
        raise InvalidInput(f"choose at least one scope: {', '.join(SCOPES)}", field="scopes")
    return [scope for scope in SCOPES if scope in requested]


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


async def create_token(
    db: Database, tenant_id: str, name: str, scopes: str | list[str], created_by: str | None = None
) -> NewToken:
    clean_name = name.strip()
    if not clean_name:
        raise InvalidInput("token name must not be empty", field="name")
    if len(clean_name) > 100:
        raise InvalidInput("token name is longer than 100 characters", field="name")
    scope_list = parse_scopes(scopes)
    token_id = new_id()
    secret = "".join(secrets.choice(_SECRET_ALPHABET) for _ in range(SECRET_LENGTH))
    async with db.transaction() as tx:
        if not await tenant_store.tenant_exists(tx, tenant_id):
            raise NotFound(f"unknown tenant {tenant_id}", field="tenant")
        # the prefix is public and unique; retry on the (astronomically rare) collision
        while True:
            prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
            if not await token_store.prefix_taken(tx, prefix):
                break
        await token_store.insert_token(
            tx,
            token_id=token_id,
            tenant_id=tenant_id,
            created_by=created_by,
            name=clean_name,
            prefix=prefix,
            secret_sha256=_digest(secret),
            scopes=",".join(scope_list),
            created_at=now_iso(),
        )
        await audit.record(tx, tenant_id, "token.created", "token", token_id,
                           {"name": clean_name, "scopes": scope_list, "prefix": prefix})
    return NewToken(token_id, clean_name, prefix, scope_list, f"svc_{prefix}_{secret}")


class LastUsedTracker:
    """Remembers when each token was last used and writes it in batches, not once per request."""

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}

    def mark(self, token_id: str) -> None:
        self._pending[token_id] = now_iso()

    async def flush(self, db: Database) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, {}
        async with db.transaction() as tx:
            await token_store.touch_tokens(tx, [(used_at, token_id) for token_id, used_at in batch.items()])


AUTH_EPOCH_FILE = "auth-epoch"
Epoch = tuple[int, int, int]


def _auth_epoch(db: Database) -> Epoch:
    """Changes when any process revokes access: the data dir's file (`tms admin` on the same SQLite
    file) or the database's signal (another replica, or `tms admin`, on PostgreSQL: there every
    process hears it, so no file is read or written and a replica's data dir may be empty)."""
    signalled = db.epoch(AUTH_SIGNAL)
    if db.dialect == "postgres":
        return (0, 0, signalled)
    try:
        stat = os.stat(db.data_dir / AUTH_EPOCH_FILE)
    except FileNotFoundError:
        return (0, 0, signalled)
    return (stat.st_ino, stat.st_mtime_ns, signalled)


def bump_auth_epoch(db: Database) -> None:
    """Tells every process serving this data dir that some token or tenant lost its access."""
    if db.dialect == "postgres":  # the transaction's signal told every process already
        verified_tokens.clear()
        return
    target = db.data_dir / AUTH_EPOCH_FILE
    scratch = target.with_suffix(f".{os.getpid()}.tmp")
    scratch.write_text(str(time.time_ns()))
    os.replace(scratch, target)  # a new inode and mtime: cheap for readers to notice with one stat()
    verified_tokens.clear()


class VerifiedTokenCache:
    """Recently verified tokens, so a busy CI runner costs no database read per request.

    An entry is only trusted while the data dir's auth epoch file is unchanged: revoking a token
    or suspending a tenant, in this process or in `tms admin`, replaces that file after commit, so
    the next request re-reads the database. The TTL only bounds changes made behind the service's
    back (e.g. with the sqlite3 shell).
    """

    TTL_SECONDS = 10.0
    MAX_ENTRIES = 10_000

    def __init__(self) -> None:
        self._entries: dict[bytes, tuple[ApiPrincipal, float, Epoch]] = {}

    def get(self, digest: bytes, epoch: Epoch) -> ApiPrincipal | None:
        entry = self._entries.get(digest)
        if entry is None or entry[1] < time.monotonic() or entry[2] != epoch:
            return None
        return entry[0]

    def put(self, digest: bytes, principal: ApiPrincipal, epoch: Epoch) -> None:
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.clear()
        self._entries[digest] = (principal, time.monotonic() + self.TTL_SECONDS, epoch)

    def clear(self) -> None:
        self._entries.clear()


verified_tokens = VerifiedTokenCache()


async def verify_token(db: Database, presented: str) -> ApiPrincipal | None:
    """The principal for a valid, unrevoked token of an active tenant; None for anything else."""
    match = TOKEN_PATTERN.match(presented)
    if match is None:
        return None
    prefix, secret = match.groups()
    # the cache key is the digest of the whole token, so a wrong secret can never hit a cached entry
    cache_key = _digest(presented)
    epoch = _auth_epoch(db)
    cached = verified_tokens.get(cache_key, epoch)
    if cached is not None:
        return cached
    row = await token_store.find_token_by_prefix(db, prefix)
    if row is None or not hmac.compare_digest(bytes(row["secret_sha256"]), _digest(secret)):
        return None
    if row["revoked_at"] is not None or row["tenant_status"] != "ACTIVE":
        return None
    principal = ApiPrincipal(
        token_id=row["id"],
        tenant_id=row["tenant_id"],
        tenant_name=row["tenant_name"],
        tenant_status=row["tenant_status"],
        scopes=frozenset(row["scopes"].split(",")),
        token_name=row["name"],
    )
    verified_tokens.put(cache_key, principal, epoch)
    return principal


async def list_tokens(db: Database, tenant_id: str) -> list[Row]:
    return await token_store.list_tokens(db, tenant_id)


async def revoke_token(db: Database, tenant_id: str, token_id: str) -> None:
    async with db.transaction() as tx:
        tx.after_commit(lambda: bump_auth_epoch(db))
        await tx.signal(AUTH_SIGNAL)
        revoked = await token_store.revoke_token(tx, tenant_id, token_id, now_iso())
        if not revoked and not await token_store.token_exists(tx, tenant_id, token_id):
            raise NotFound("token not found")
        if revoked:
            await audit.record(tx, tenant_id, "token.revoked", "token", token_id)


async def revoke_created_by(tx: Transaction, db: Database, tenant_id: str, user_id: str, reason: str) -> list[Row]:
    """Revokes, in the caller's transaction, every token the user created (their deactivation or
    demotion below admin); one ``token.revoked`` entry per token, with the reason. Returns them."""
    live = await token_store.live_tokens_created_by(tx, tenant_id, user_id)
    if not live:
        return []
    tx.after_commit(lambda: bump_auth_epoch(db))
    await tx.signal(AUTH_SIGNAL)
    await token_store.revoke_tokens_created_by(tx, tenant_id, user_id, now_iso())
    await audit.record_many(tx, tenant_id, [
        audit.Entry("token.revoked", "token", row["id"], {"name": row["name"], "prefix": row["prefix"],
                                                          "created_by": user_id, "reason": reason})
        for row in live])
    return live


async def creator_of(db: Database | Transaction, tenant_id: str, token_id: str) -> str | None:
    """Whose act an API call with this token is (case review: the author and the reviewer are users)."""
    return await token_store.creator_of(db, tenant_id, token_id)
