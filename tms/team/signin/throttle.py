"""Login throttling: a sliding window of failed sign-ins per (account, client) pair and per client.

Five wrong passwords for one account from one client make that client wait before trying that
account again; twenty failures from one client (any accounts) make it wait for every account. An
account is never locked for everyone: a correct password from a client that is not itself
throttled signs in, so nobody can lock a known user out by typing wrong passwords. The failures
live in the database (``login_failures``), so throttling survives a restart and holds across
replicas; ``tms admin unlock-user --email E`` lifts it for an account.

The same table and window throttle two more things, under addresses of their own so they never mix
with password failures: wrong two-factor codes (``2fa:<user id>``, ``tms.team.signin.two_factor``) and
forgot-password requests (``ResetThrottle``).
"""

from __future__ import annotations

import time

from tms.db import Database
from tms.team.signin import login_failures


class LoginThrottle:
    def __init__(self, db: Database, per_pair: int = 5, per_address: int = 20, window_seconds: float = 900) -> None:
        self.db = db
        self.per_pair = per_pair
        self.per_address = per_address
        self.window = window_seconds

    async def retry_after(self, address: str, email: str) -> int:
        """Seconds until this client may try this account again; 0 when it may now."""
        now = time.time()
        row = await login_failures.recent(self.db, address, email.lower(), now - self.window)
        waits = []
        if (row["pair"] or 0) >= self.per_pair:
            waits.append(row["pair_first"] + self.window - now)
        if row["address"] >= self.per_address:
            waits.append(row["address_first"] + self.window - now)
        return int(max(waits)) + 1 if waits else 0

    async def record_failure(self, address: str, email: str) -> None:
        now = time.time()
        await login_failures.record(self.db, address, email.lower(), now, now - self.window)

    async def record_success(self, address: str, email: str) -> None:
        await login_failures.forget_pair(self.db, address, email.lower())

    async def forget_stale(self) -> int:
        """Daily: failures past the window from clients that did not fail again."""
        return await login_failures.forget_older_than(self.db, time.time() - self.window)


class ResetThrottle:
    """Forgot-password requests, every one counted (they all may send a mail): three per address asked
    for within 15 minutes (from any clients), and ten per client (for any addresses)."""

    def __init__(self, db: Database, per_email: int = 3, per_client: int = 10) -> None:
        self.by_email = LoginThrottle(db, per_pair=per_email, per_address=per_email)
        self.by_client = LoginThrottle(db, per_pair=per_client, per_address=per_client)

    async def retry_after(self, client: str, email: str) -> int:
        email = email.lower()
        return max(await self.by_email.retry_after(f"reset:{email}", client),
                   await self.by_client.retry_after(f"reset-from:{client}", email))

    async def record(self, client: str, email: str) -> None:
        email = email.lower()
        await self.by_email.record_failure(f"reset:{email}", client)
        await self.by_client.record_failure(f"reset-from:{client}", email)


async def unlock(db: Database, email: str) -> int:
    """Forgets every failed sign-in for ``email`` (from any client); returns how many."""
    return await login_failures.forget_email(db, email.strip().lower())
