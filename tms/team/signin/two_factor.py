"""Two-factor sign-in with TOTP (RFC 6238, through pyotp): enrolment, codes, recovery codes, the tenant switch.

- **Enrolment** (``/account/2fa``): a random 160-bit seed is stored encrypted (``secret_box``) and shown,
  while the enrolment waits, as a QR code (inline SVG, drawn by segno) and as text; the first correct code
  confirms it, and ten recovery codes (80 bits each, stored as SHA-256 digests) are shown once.
- **Sign-in**: the password step signs a session in without its second factor; pages then send it to
  ``/login/two-factor`` until a code (or a recovery code) is accepted there (``second_factor`` in the
  session: ``tms.team.signin.session_cookie``). A code is accepted in the current time step or one either
  side (clock drift), and only in a step later than the last accepted one: a replayed code is refused.
- **Throttling**: wrong codes count in ``login_failures`` under the address ``2fa:<user id>``: five from
  one client, or ten from any clients, within 15 minutes make the next tries wait (429). That bounds a
  brute force of the 6-digit code to 960 tries a day (3 of a million codes are valid at once).
- **The tenant switch** sends members without two-factor to enrolment after their password; an admin
  resets a member's two-factor (lost device): seed and codes go, their sessions end. Every enrolment,
  failure, recovery, reset and switch is an audit entry; no seed or code is ever logged or audited.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass

import pyotp
import segno
from pyotp.exceptions import OTPVerificationError

from tms.config import Config
from tms.db import Database, Row
from tms.errors import Conflict, DomainError, InvalidInput, NotFound
from tms.ids import now_iso
from tms.team import store as user_store
from tms.team.audit import service as audit
from tms.team.signin import login_failures, secret_box
from tms.team.signin import sessions as session_store
from tms.team.signin import two_factor_store as store
from tms.team.signin.throttle import LoginThrottle

ISSUER = "TMS"
SEED_PURPOSE = "totp-seed"
RECOVERY_CODES = 10
VALID_WINDOW = 1  # time steps either side of now


class TooManyAttempts(DomainError):
    status_code = 429
    title = "Too Many Requests"

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"Too many wrong codes. Try again in {retry_after} seconds.", field="code")
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Enrolment:
    seed: str  # base32, for typing into an app that cannot scan
    uri: str   # otpauth://totp/...
    svg: str   # the QR code of ``uri``, an inline <svg>


@dataclass(frozen=True, slots=True)
class State:
    enrolled: bool
    required: bool


def _throttle(db: Database) -> LoginThrottle:
    return LoginThrottle(db, per_pair=5, per_address=10)


def _throttle_key(user_id: str) -> str:
    return f"2fa:{user_id}"


def _digest(code: str) -> bytes:
    return hashlib.sha256(normalise_recovery_code(code).encode()).digest()


def normalise_recovery_code(code: str) -> str:
    return "".join(ch for ch in code.lower() if ch.isalnum())


def _new_recovery_codes() -> list[str]:
    # 16 base32 characters = 80 bits: a digest of it cannot be brute-forced, so SHA-256 suffices
    codes = []
    for _ in range(RECOVERY_CODES):
        raw = base64.b32encode(secrets.token_bytes(10)).decode().lower()
        codes.append("-".join(raw[i:i + 4] for i in range(0, 16, 4)))
    return codes


def _qr_svg(uri: str) -> str:
    return str(segno.make(uri, error="m").svg_inline(scale=4, title="Two-factor QR code"))


async def state(db: Database, user_id: str, tenant_id: str) -> State:
    row = await store.sign_in_state(db, user_id, tenant_id)
    return State(bool(row["enrolled"]), bool(row["required"]))


async def enrolment(db: Database, user_id: str) -> Row | None:
    return await store.get(db, user_id)


async def start_enrolment(db: Database, config: Config, tenant_id: str, user_id: str) -> None:
    """A new seed awaiting its first code; a confirmed enrolment must be turned off first."""
    seed = pyotp.random_base32(32)
    async with db.transaction() as tx:
        current = await store.get(tx, user_id)
        if current is not None and current["confirmed_at"]:
            raise Conflict("Two-factor is already on.", field="code")
        await store.put_pending(tx, user_id, tenant_id, secret_box.encrypt(config, SEED_PURPOSE, seed), now_iso())


async def pending_enrolment(db: Database, config: Config, user_id: str, email: str) -> Enrolment | None:
    row = await store.get(db, user_id)
    if row is None or row["confirmed_at"]:
        return None
    seed = secret_box.decrypt(config, SEED_PURPOSE, row["seed_encrypted"])
    uri = pyotp.TOTP(seed).provisioning_uri(name=email, issuer_name=ISSUER)
    return Enrolment(seed, uri, _qr_svg(uri))


def _time_step(seed: str, code: str) -> int | None:
    code = "".join(code.split())
    if not (code.isdigit() and len(code) == 6):
        return None
    try:  # the matched step, so that it and older ones can be refused next time
        return int(pyotp.TOTP(seed).verify_and_get_timecode(code, valid_window=VALID_WINDOW))
    except OTPVerificationError:
        return None


async def confirm_enrolment(db: Database, config: Config, tenant_id: str, user_id: str, code: str) -> list[str]:
    """Confirms the pending seed with a code from the app; returns the recovery codes, shown once."""
    row = await store.get(db, user_id)
    if row is None or row["confirmed_at"]:
        raise Conflict("Start the set-up again.", field="code")
    step = _time_step(secret_box.decrypt(config, SEED_PURPOSE, row["seed_encrypted"]), code)
    if step is None:
        raise InvalidInput("That code is not right. Check the time on your phone and try the next code.",
                           field="code")
    codes = _new_recovery_codes()
    async with db.transaction() as tx:
        if not await store.confirm(tx, user_id, now_iso(), step):
            raise Conflict("Two-factor is already on.", field="code")
        await store.replace_recovery_codes(tx, user_id, [_digest(c) for c in codes], now_iso())
        await audit.record(tx, tenant_id, "user.two_factor_enrolled", "user", user_id,
                           {"method": "totp", "recovery_codes": RECOVERY_CODES})
    return codes


async def verify(db: Database, config: Config, tenant_id: str, user_id: str, code: str, client: str) -> str:
    """Checks a sign-in's second factor: a TOTP code, or a recovery code (used up). Returns which
    (``totp`` or ``recovery``); raises ``TooManyAttempts`` or ``InvalidInput``. Every failure is audited."""
    throttle = _throttle(db)
    wait = await throttle.retry_after(_throttle_key(user_id), client)
    if wait:
        raise TooManyAttempts(wait)
    row = await store.get(db, user_id)
    if row is None or not row["confirmed_at"]:
        return "none"
    method, accepted, now = "totp", False, now_iso()
    async with db.transaction() as tx:
        step = _time_step(secret_box.decrypt(config, SEED_PURPOSE, row["seed_encrypted"]), code)
        if step is not None:
            accepted = bool(await store.use_time_step(tx, user_id, step))
            replay = not accepted
        elif len(normalise_recovery_code(code)) == 16:
            method = "recovery"
            accepted = bool(await store.use_recovery_code(tx, user_id, _digest(code), now))
            replay = False
        else:
            replay = False
        if accepted and method == "recovery":
            await audit.record(tx, tenant_id, "user.two_factor_recovery_used", "user", user_id,
                               {"codes_left": await store.recovery_codes_left(tx, user_id), "address": client})
        elif not accepted:
            await audit.record(tx, tenant_id, "user.two_factor_failed", "user", user_id,
                               {"method": method, "reason": "code already used" if replay else "wrong code",
                                "address": client})
    if not accepted:
        await throttle.record_failure(_throttle_key(user_id), client)
        raise InvalidInput("That code was already used: wait for the next one." if replay
                           else "That code is not right.", field="code")
    await throttle.record_success(_throttle_key(user_id), client)
    return method


async def regenerate_recovery_codes(db: Database, config: Config, tenant_id: str, user_id: str, code: str,
                                    client: str) -> list[str]:
    """New recovery codes (the old ones stop working), with a current code as proof."""
    if await verify(db, config, tenant_id, user_id, code, client) == "none":
        raise Conflict("Two-factor is off.", field="code")
    codes = _new_recovery_codes()
    async with db.transaction() as tx:
        await store.replace_recovery_codes(tx, user_id, [_digest(c) for c in codes], now_iso())
        await audit.record(tx, tenant_id, "user.recovery_codes_replaced", "user", user_id,
                           {"recovery_codes": RECOVERY_CODES})
    return codes


async def recovery_codes_left(db: Database, user_id: str) -> int:
    return await store.recovery_codes_left(db, user_id)


async def turn_off(db: Database, config: Config, tenant_id: str, user_id: str, code: str, client: str) -> None:
    """The user turns their own two-factor off, with a current code; not while the tenant requires it."""
    if await store.required(db, tenant_id):
        raise Conflict("Your team requires two-factor: it stays on.", field="code")
    if await verify(db, config, tenant_id, user_id, code, client) == "none":
        raise Conflict("Two-factor is off.", field="code")
    async with db.transaction() as tx:
        await store.remove(tx, user_id)
        await audit.record(tx, tenant_id, "user.two_factor_disabled", "user", user_id)


async def cancel_enrolment(db: Database, user_id: str) -> None:
    async with db.transaction() as tx:
        current = await store.get(tx, user_id)
        if current is not None and not current["confirmed_at"]:
            await store.remove(tx, user_id)


async def members(db: Database, tenant_id: str) -> list[Row]:
    return await store.members(db, tenant_id)


async def is_required(db: Database, tenant_id: str) -> bool:
    return await store.required(db, tenant_id)


async def set_required(db: Database, tenant_id: str, actor_id: str, required: bool) -> bool:
    """Turns the tenant's switch; True when it changed. Turning it on needs the admin's own two-factor,
    so nobody locks the team into a rule they have not followed themselves."""
    async with db.transaction() as tx:
        before = await store.required(tx, tenant_id)
        if before == required:
            return False
        if required:
            mine = await store.get(tx, actor_id)
            if mine is None or not mine["confirmed_at"]:
                raise Conflict("Set up two-factor for yourself first, at /account/2fa.", field="required")
        await store.set_required(tx, tenant_id, required, now_iso())
        await audit.record(tx, tenant_id, "tenant.two_factor_required", "tenant", tenant_id,
                           {"required": [before, required]})
    return True


async def reset(db: Database, tenant_id: str, actor_id: str, user_id: str) -> None:
    """An admin removes a member's two-factor (a lost device): seed and recovery codes go, the member's
    sessions end, their code throttle is lifted. The owner's is reset only by the owner."""
    member = await user_store.get_member(db, tenant_id, user_id)
    if member is None:
        raise NotFound(f"user {user_id} not found")
    if member["role"] == "owner" and member["id"] != actor_id:
        raise Conflict("The owner's two-factor is reset only by the owner (a recovery code signs them in).",
                       field="user")
    await _remove(db, tenant_id, user_id, member["email"], {})


COMMAND_LINE = audit.Actor("system", None, "tms admin (command line)")


async def reset_by_email(db: Database, email: str) -> str:
    """``tms admin two-factor reset --email``: the way back for a member no admin can reset, above all an
    owner who lost both the device and the recovery codes. Whoever runs it has the server's database,
    so it needs no role; it is audited as the command line, and ends the member's sessions like the
    admin's reset. Returns what was done, for the operator."""
    found = await user_store.find_user_by_email(db, email.strip())
    if found is None:
        raise NotFound(f"no account uses {email.strip()}", field="email")
    audit.acting_as(COMMAND_LINE)
    ended = await _remove(db, found["tenant_id"], found["id"], found["email"], {"by": "command line"})
    return (f"two-factor of {found['email']} reset: they sign in with their password and set it up again "
            f"({ended} session{'s' if ended != 1 else ''} ended)")


async def _remove(db: Database, tenant_id: str, user_id: str, email: str, extra: dict[str, str]) -> int:
    """Seed and recovery codes removed, sessions ended (each audited) and the code throttle lifted, in one
    transaction; returns how many sessions ended."""
    async with db.transaction() as tx:
        if not await store.remove(tx, user_id):
            raise Conflict(f"{email} has no two-factor to reset.", field="user")
        await audit.record(tx, tenant_id, "user.two_factor_reset", "user", user_id, {"email": email, **extra})
        ended = await session_store.end_sessions(tx, user_id)
        if ended:
            await audit.record(tx, tenant_id, "user.sessions_ended", "user", user_id,
                               {"sessions": ended, "reason": "two-factor reset"})
    await login_failures.forget_address(db, _throttle_key(user_id))
    return ended
