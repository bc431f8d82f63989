"""``tms admin attachments migrate --to s3|local``: copy every object to the other store, verified.

Each object is streamed from the store it is in now to the target under the same key, then read
back from the target: its size and SHA-256 must equal the source's (and, for a content-addressed
key, the hash in the key). Each verified copy is recorded in ``attachment_copies``, so a migration
stopped half-way resumes where it stopped. The command never switches the running service over by
itself: only when every object is verified in the target does it print the one setting to change
(``attachments.store``), and it exits non-zero while any object is missing. Uploads that arrive
between that message and the restart are in the old store only: running the command once more
after the switch copies them (see docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from tms.attachments import objects
from tms.attachments import store as attachment_store
from tms.attachments.objects import AttachmentStore
from tms.config import Config
from tms.db import Database
from tms.errors import NotFound, StoreUnavailable
from tms.ids import now_iso

PAGE = 200
# objects in flight at once: each waits mostly on the two stores (a write, then the read-back), so
# more than the cores; the memory is bounded by this many objects' current chunks
CONCURRENCY = 16
# verified copies recorded per transaction (a migration killed in between copies at most these again)
RECORD_BATCH = 200


@dataclass
class Outcome:
    copied: int = 0
    already: int = 0
    bytes: int = 0
    failed: list[str] = field(default_factory=list)
    total: int = 0


class ProgressBar:
    """One line on stderr, redrawn in place (at most ten times a second)."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total = total
        self.out = out
        self.last = 0.0

    def show(self, done: int, size: int, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = width * done // self.total if self.total else width
        self.out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} objects, "
                       f"{size / 1_000_000:.1f} MB")
        if final:
            self.out.write("\n")
        self.out.flush()


async def _digest(store: AttachmentStore, key: str) -> tuple[str, int]:
    opened = await store.open(key)
    hasher = hashlib.sha256()
    size = 0
    async for chunk in opened.chunks:
        hasher.update(chunk)
        size += len(chunk)
    return hasher.hexdigest(), size


async def _copy_one(source: AttachmentStore, target: AttachmentStore,
                    row: dict[str, object]) -> tuple[str, str, int]:
    """Copies one object and reads it back; returns (key, SHA-256, size) once verified."""
    key = str(row["object_key"])
    expected_size = int(str(row["size"]))
    opened = await source.open(key)
    writer = target.writer()
    hasher = hashlib.sha256()
    size = 0
    try:
        async for chunk in opened.chunks:
            hasher.update(chunk)
            size += len(chunk)
            await writer.write(chunk)
        await writer.close()
        sha256 = hasher.hexdigest()
        known = row["sha256"] or (key.rsplit("/", 1)[1] if "/" in key else None)
        if size != expected_size or (known and known != sha256):
            raise ValueError(f"{key}: the source holds {size} bytes with SHA-256 {sha256}, "
                             f"the database expects {expected_size} bytes{f' with {known}' if known else ''}")
        await writer.publish(key)
    except BaseException:
        await writer.discard()
        raise
    # verified by reading the target back, not by trusting the write
    copied_sha, copied_size = await _digest(target, key)
    if (copied_sha, copied_size) != (sha256, size):
        raise ValueError(f"{key}: the copy reads back as {copied_size} bytes with SHA-256 {copied_sha}")
    return key, sha256, size


async def migrate(db: Database, config: Config, target_name: str, out: TextIO = sys.stderr) -> Outcome:
    """Copies every object not yet verified in the target: ``CONCURRENCY`` workers take the objects
    from a short queue that one walk of the table (pages of ``PAGE``, key order) fills, and the
    verified copies are recorded ``RECORD_BATCH`` to a transaction. Memory does not grow with the count."""
    source_name = "local" if target_name == "s3" else "s3"
    source = objects.store_for(config, source_name)
    target = objects.store_for(config, target_name)
    await target.check()
    outcome = Outcome(total=await attachment_store.count_objects(db))
    bar = ProgressBar(outcome.total, out)
    queue: asyncio.Queue[dict[str, object] | None] = asyncio.Queue(maxsize=2 * CONCURRENCY)
    verified: list[tuple[str, str, int]] = []
    done = 0

    async def record() -> None:
        if verified:
            batch = verified[:]
            verified.clear()
            async with db.transaction() as tx:
                await attachment_store.record_copies(tx, target_name, batch, now_iso())

    async def worker() -> None:
        nonlocal done
        while (row := await queue.get()) is not None:
            try:
                copied = await _copy_one(source, target, row)
                verified.append(copied)
                outcome.bytes += copied[2]
                outcome.copied += 1
            except NotFound:
                outcome.failed.append(f"{row['object_key']}: missing in the {source_name} store")
            except (ValueError, StoreUnavailable) as exc:
                outcome.failed.append(str(exc) if isinstance(exc, ValueError) else f"{row['object_key']}: {exc}")
            done += 1
            bar.show(done, outcome.bytes)
            if len(verified) >= RECORD_BATCH:
                await record()

    async def walk() -> None:
        nonlocal done
        after = ""
        while rows := await attachment_store.objects_page(db, after, PAGE):
            after = rows[-1]["object_key"]
            copied = await attachment_store.copied_keys(db, target_name, [r["object_key"] for r in rows])
            outcome.already += len(copied)
            done += len(copied)
            for row in rows:
                if row["object_key"] not in copied:
                    await queue.put(row)
            bar.show(done, outcome.bytes)
        for _ in range(CONCURRENCY):
            await queue.put(None)

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(walk())
            for _ in range(CONCURRENCY):
                group.create_task(worker())
    finally:
        await record()  # what was verified stays verified, even when the run stops on an error
    bar.show(done, outcome.bytes, final=True)
    await source.close()
    await target.close()
    return outcome


def report(config: Config, target_name: str, outcome: Outcome, verified: int, total: int) -> tuple[int, str]:
    """The exit code and the closing lines: the switch is named only when every object is verified."""
    lines = [f"copied {outcome.copied} objects ({outcome.bytes} bytes) to {target_name}, "
             f"{outcome.already} were already there; {verified} of {total} verified in {target_name}"]
    lines.extend(f"failed: {failure}" for failure in outcome.failed[:20])
    if len(outcome.failed) > 20:
        lines.append(f"... and {len(outcome.failed) - 20} more failures")
    if outcome.failed or verified < total:
        lines.append(f"not switching: {total - verified} objects are not in {target_name} yet; run the command "
                     "again (it resumes) once the failures above are fixed")
        return 1, "\n".join(lines)
    env = f"TMS_ATTACHMENTS_STORE={target_name}"
    if str(config.get("attachments.store")) == target_name:
        lines.append(f"every object is in {target_name}; attachments.store is already {target_name}")
    else:
        lines.append(f"every object is in {target_name} and verified. Switch now: set [attachments] store = "
                     f"\"{target_name}\" (or {env}) on every replica and restart them, then run this command once "
                     "more to copy what was uploaded in between")
    return 0, "\n".join(lines)


async def run(db: Database, config: Config, target_name: str, out: TextIO = sys.stderr) -> tuple[int, str]:
    outcome = await migrate(db, config, target_name, out)
    total = await attachment_store.count_objects(db)
    verified = await attachment_store.count_copied(db, target_name)
    return report(config, target_name, outcome, verified, total)
