"""The Gherkin diff of two versions of a case (issue 22), shown by the versions page.

The common first and last lines are skipped in linear
time; the part between is compared as a longest common subsequence of lines by rapidfuzz (C++,
bit-parallel: N*M/64 word operations and N*M bits of memory), in a worker thread, when N*M is at
most MAX_DIFF_CELLS (32 MB of bits, ~50 ms), else the page says it is too large to compare. Unchanged
runs fold to DIFF_CONTEXT lines around each change, at most MAX_DIFF_ROWS rows are shown, and each
version pair's diff is kept (versions never change) in a small LRU cache shared by concurrent views.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from dataclasses import dataclass

from rapidfuzz.distance import Indel

MAX_DIFF_CELLS = 16_000 * 16_000
DIFF_CONTEXT = 3
MAX_DIFF_ROWS = 5_000
DIFF_CACHE_SIZE = 64

DiffRow = tuple[str, int | None, int | None, str]


@dataclass(frozen=True)
class LineDiff:
    """Rows (kind, old line no, new line no, text), kind same/del/add, or fold (text = how many unchanged
    lines are hidden there); ``too_large`` = the changed part's lines (old, new) when not compared."""

    rows: list[DiffRow]
    changed: bool
    hidden: int = 0
    too_large: tuple[int, int] | None = None


def diff_rows(old: str, new: str) -> LineDiff:
    """A line-by-line diff of two texts, bounded in time, memory and size (see MAX_DIFF_CELLS)."""
    a, b = old.splitlines(), new.splitlines()
    start, shortest = 0, min(len(a), len(b))
    while start < shortest and a[start] == b[start]:
        start += 1
    end = 0
    while end < shortest - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    a_end, b_end = len(a) - end, len(b) - end
    if start == a_end and start == b_end:
        return LineDiff(_folded_same(a, 0, 0, len(a), True, True), changed=False)
    builder = _DiffBuilder()
    builder.same(a, 0, 0, start, at_start=True, at_end=False)
    a_mid, b_mid = a[start:a_end], b[start:b_end]
    too_large = None
    if len(a_mid) * len(b_mid) > MAX_DIFF_CELLS:
        too_large = (len(a_mid), len(b_mid))
        where = f"lines {start + 1} to {a_end} (old) and {start + 1} to {b_end} (new)"
        builder.rows.append(("fold", None, None, f"{where}: not compared"))
    elif not a_mid or not b_mid:
        builder.change(a, b, start, a_end, start, b_end)
    else:
        i = j = start  # where the pending change began in a and b
        for op in Indel.opcodes(a_mid, b_mid):
            if op.tag != "equal":
                continue
            i1, i2, j1 = start + op.src_start, start + op.src_end, start + op.dest_start
            builder.change(a, b, i, i1, j, j1)
            k = 0  # lines rapidfuzz matched by hash: compared for real
            while k < i2 - i1 and a[i1 + k] == b[j1 + k]:
                k += 1
            builder.same(a, i1, j1, k, at_start=False, at_end=False)
            i, j = i1 + k, j1 + k
        builder.change(a, b, i, a_end, j, b_end)
    builder.same(a, a_end, b_end, end, at_start=False, at_end=True)
    return LineDiff(builder.rows, changed=True, hidden=builder.hidden, too_large=too_large)


class _DiffBuilder:
    def __init__(self) -> None:
        self.rows: list[DiffRow] = []
        self.hidden = 0

    def _add(self, row: DiffRow) -> None:
        if len(self.rows) < MAX_DIFF_ROWS:
            self.rows.append(row)
        elif row[0] != "same" and row[0] != "fold":
            self.hidden += 1

    def change(self, a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int) -> None:
        if len(self.rows) >= MAX_DIFF_ROWS:
            self.hidden += (i2 - i1) + (j2 - j1)
            return
        for i in range(i1, i2):
            self._add(("del", i + 1, None, a[i]))
        for j in range(j1, j2):
            self._add(("add", None, j + 1, b[j]))

    def same(self, a: list[str], i: int, j: int, count: int, *, at_start: bool, at_end: bool) -> None:
        if count and len(self.rows) < MAX_DIFF_ROWS:
            for row in _folded_same(a, i, j, count, at_start, at_end):
                self._add(row)


def _folded_same(a: list[str], i: int, j: int, count: int, at_start: bool, at_end: bool) -> list[DiffRow]:
    """A run of unchanged lines: the DIFF_CONTEXT lines next to a change, the rest as one fold row."""
    before = 0 if at_start else min(DIFF_CONTEXT, count)
    after = 0 if at_end else min(DIFF_CONTEXT, count - before)
    if at_start and at_end:  # nothing changed: every line
        before, after = min(count, MAX_DIFF_ROWS), 0
    rows: list[DiffRow] = [("same", i + k + 1, j + k + 1, a[i + k]) for k in range(before)]
    folded = count - before - after
    if folded > 0:
        rows.append(("fold", None, None, f"{folded} unchanged line{'s' if folded != 1 else ''}"))
    rows += [("same", i + k + 1, j + k + 1, a[i + k]) for k in range(count - after, count)]
    return rows


_diffs: OrderedDict[tuple[str, str, int, int], LineDiff | asyncio.Task[LineDiff]] = OrderedDict()
# at most two diffs computing at once (each up to 32 MB of bits); the others wait here, not in the
# worker threads that imports and other pages share. One semaphore per event loop.
_diff_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


async def _computed(old: str, new: str) -> LineDiff:
    slots = _diff_slots.setdefault(asyncio.get_running_loop(), asyncio.Semaphore(2))
    async with slots:
        return await asyncio.to_thread(diff_rows, old, new)


async def cached_diff(tenant_id: str, case_id: str, a: int, b: int, old: str, new: str) -> LineDiff:
    """The diff of versions ``a`` and ``b`` of a case, computed once in a worker thread (concurrent
    views of the same pair wait for the same computation)."""
    key = (tenant_id, case_id, a, b)
    entry = _diffs.get(key)
    if isinstance(entry, LineDiff):
        _diffs.move_to_end(key)
        return entry
    if entry is None or entry.get_loop() is not asyncio.get_running_loop():
        entry = asyncio.ensure_future(_computed(old, new))
        _diffs[key] = entry
        while len(_diffs) > DIFF_CACHE_SIZE:
            _diffs.popitem(last=False)
    try:
        diff = await asyncio.shield(entry)
    except Exception:
        _diffs.pop(key, None)
        raise
    if key in _diffs:
        _diffs[key] = diff
    return diff
