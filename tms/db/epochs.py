"""This process's view of the signals of ``Transaction.signal``: one counter per name, and the outbox
wake-up. Both backends keep it the same way; only how a signal reaches other processes differs (on
SQLite no other process serves the file; on PostgreSQL LISTEN/NOTIFY calls ``bump``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tms.db import OUTBOX_SIGNAL


class Epochs:
    def __init__(self) -> None:
        self._epochs: dict[str, int] = {}
        self._bumpers: dict[str, Callable[[], None]] = {}
        # set when events were written (here or by another replica); the webhook dispatcher waits on it
        self.outbox_wakeup = asyncio.Event()
        # told (tenant_id, project_id) after each commit that wrote results in this process
        self.results_written: list[Callable[[str, str], None]] = []

    def epoch(self, name: str) -> int:
        return self._epochs.get(name, 0)

    def bump(self, name: str) -> None:
        self._epochs[name] = self._epochs.get(name, 0) + 1
        if name == OUTBOX_SIGNAL:
            self.outbox_wakeup.set()

    def bump_all(self) -> None:
        """Every name counts as signalled (a listener that may have missed some)."""
        for name in [*self._epochs, OUTBOX_SIGNAL]:
            self.bump(name)

    def signalled(self, name: str) -> Callable[[], None]:
        """The after-commit callback of ``signal(name)``: one object per name, so that ``after_commit``
        runs it once per transaction however often the transaction signals."""
        bumper = self._bumpers.get(name)
        if bumper is None:
            bumper = self._bumpers[name] = lambda: self.bump(name)
        return bumper
