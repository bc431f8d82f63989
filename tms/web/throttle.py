"""Login throttling: a sliding window of failed attempts per address and per account."""

from __future__ import annotations

import time
from collections import defaultdict, deque


class LoginThrottle:
    def __init__(self, per_account: int = 5, per_address: int = 20, window_seconds: float = 900) -> None:
        self.per_account = per_account
        self.per_address = per_address
        self.window = window_seconds
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def _recent(self, key: str, now: float) -> deque[float]:
        attempts = self._failures[key]
        while attempts and attempts[0] <= now - self.window:
            attempts.popleft()
        return attempts

    def retry_after(self, address: str, email: str) -> int:
        """Seconds until another attempt is allowed; 0 when it is allowed now."""
        now = time.monotonic()
        waits = []
        for key, limit in ((f"a:{address}", self.per_address), (f"e:{email.lower()}", self.per_account)):
            attempts = self._recent(key, now)
            if len(attempts) >= limit:
                waits.append(attempts[0] + self.window - now)
        return int(max(waits)) + 1 if waits else 0

    def record_failure(self, address: str, email: str) -> None:
        now = time.monotonic()
        self._failures[f"a:{address}"].append(now)
        self._failures[f"e:{email.lower()}"].append(now)
        if len(self._failures) > 100_000:  # bound memory under a spray of random emails
            self._failures.clear()

    def record_success(self, email: str) -> None:
        self._failures.pop(f"e:{email.lower()}", None)
