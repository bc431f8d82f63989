"""Tenants and their web users: creation, password hashing and checking."""

from __future__ import annotations

import asyncio
import functools
import hashlib

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from tms.db import Database, Row
from tms.db import settings as settings_store
from tms.errors import Conflict, InvalidInput
from tms.ids import new_id, now_iso
from tms.team import store as user_store
from tms.team.audit import service as audit
from tms.team.tenants import store as tenant_store

_hasher = PasswordHasher()  # argon2id with the library's current recommended parameters


@functools.cache
def _dummy_hash() -> str:
    """Checked against when the email is unknown, so a wrong email costs as long as a wrong password.
    Made on first use, not at import: every process that imports this module (each `tms admin`
    command, each replica's start) would otherwise pay an argon2 hash before doing anything."""
    return _hasher.hash("not-a-real-password")


MIN_PASSWORD_LENGTH = 8
MAX_NAME_LENGTH = 200


def _clean_name(name: str) -> str:
    cleaned = name.strip()
    if not cleaned:
        raise InvalidInput("name must not be empty", field="name")
    if len(cleaned) > MAX_NAME_LENGTH:
        raise InvalidInput(f"name is longer than {MAX_NAME_LENGTH} characters", field="name")
    return cleaned


def clean_email(email: str) -> str:
    cleaned = email.strip()
    local, _, domain = cleaned.partition("@")
    if not local or "." not in domain or " " in cleaned or len(cleaned) > 254:
        raise InvalidInput("enter a valid email address", field="email")
    return cleaned


def check_password_rules(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInput(f"password must have at least {MIN_PASSWORD_LENGTH} characters", field="password")
    if len(password) > 1024:
        raise InvalidInput("password is longer than 1024 characters", field="password")


async def create_tenant(db: Database, name: str) -> str:
    tenant_id = new_id()
    async with db.transaction() as tx:
        await tenant_store.insert_tenant(tx, tenant_id, _clean_name(name), now_iso())
    return tenant_id


async def hash_password(password: str) -> str:
    return await asyncio.to_thread(_hasher.hash, password)


async def verify_password(stored_hash: str, password: str) -> bool:
    try:
        return bool(await asyncio.to_thread(_hasher.verify, stored_hash, password))
    except (VerificationError, InvalidHashError):
        return False


async def create_user(db: Database, tenant_id: str, email: str, password: str, role: str | None = None) -> str:
    """A web user; without ``role`` the tenant's first user becomes its owner and later ones admins."""
    if role is not None and role not in ("owner", "admin", "tester", "viewer"):
        raise InvalidInput("role must be one of owner, admin, tester, viewer", field="role")
    email = clean_email(email)
    check_password_rules(password)
    if await tenant_store.get_tenant(db, tenant_id) is None:
        raise InvalidInput(f"unknown tenant {tenant_id}", field="tenant")
    password_hash = await asyncio.to_thread(_hasher.hash, password)
    user_id = new_id()
    async with db.transaction() as tx:
        if await user_store.email_taken(tx, email):
            raise Conflict(f"a user with email {email} already exists", field="email")
        await user_store.insert_user(tx, user_id, tenant_id, email, password_hash, now_iso(), role)
        await audit.record(tx, tenant_id, "user.created", "user", user_id, {"email": email, "role": role})
    return user_id


async def create_first_tenant_and_admin(db: Database, tenant_name: str, email: str, password: str) -> Row:
    """First-run setup: only allowed while the database has no user at all."""
    email = clean_email(email)
    check_password_rules(password)
    password_hash = await asyncio.to_thread(_hasher.hash, password)
    tenant_id, user_id, at = new_id(), new_id(), now_iso()
    async with db.transaction() as tx:
        if await user_store.any_user_exists(tx):
            raise Conflict("setup is already complete")
        await tenant_store.insert_tenant(tx, tenant_id, _clean_name(tenant_name), at)
        await user_store.insert_user(tx, user_id, tenant_id, email, password_hash, at)
    return {"tenant_id": tenant_id, "user_id": user_id}


async def authenticate_user(db: Database, email: str, password: str, *, owners_only: bool = False) -> Row | None:
    """The user when email and password match and the tenant is active; None otherwise. ``owners_only``
    (``[auth] password_login = false``): only a tenant owner's password signs in, the way back in when
    single sign-on fails."""
    user = await user_store.find_user_by_email(db, email.strip())
    stored_hash = user["password_hash"] if user else await asyncio.to_thread(_dummy_hash)
    try:
        await asyncio.to_thread(_hasher.verify, stored_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    if user is None or user["tenant_status"] != "ACTIVE" or not user["active"]:
        return None
    if owners_only:
        member = await user_store.get_member(db, user["tenant_id"], user["id"])
        if member is None or member["role"] != "owner":
            return None
    # a hash made with older (weaker) parameters is renewed; hashing takes ~0.1 s, so off the event loop
    new_hash = await hash_password(password) if _hasher.check_needs_rehash(stored_hash) else None
    async with db.transaction() as tx:
        await user_store.record_login(tx, user["id"], now_iso(), new_hash)
    return user


def _setup_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def remember_setup_link(db: Database, token: str) -> None:
    """Stores a first-run link's hash: behind a load balancer it may reach another replica."""
    await settings_store.add_setup_token(db, _setup_digest(token), now_iso())


async def setup_link_known(db: Database, token: str) -> bool:
    return await settings_store.setup_token_known(db, _setup_digest(token))
