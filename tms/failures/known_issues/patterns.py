"""Known-issue patterns: user-written regular expressions, compiled and matched so none can stall ingest.

Python's ``re`` backtracks: ``(a+)+$`` against forty ``a`` and a ``b`` runs for minutes, and a thread
with a timeout cannot interrupt it (the GIL is held inside the C matcher). So patterns run on RE2
(google-re2), which matches in time linear in the input and refuses the constructs that need
backtracking (backreferences, look-around) at compile time, with a clear message.

Linear is not cheap: the factor is the size of the pattern's RE2 program, and
``.{0,1000}.{0,1000}.{0,1000}Q`` is 27,000 instructions (a quarter of a second per 8 KB search), so
five of them against twenty 8 KB failures held an ingest for 9 s. Every dimension is bounded:

- ``MAX_PATTERN`` characters per pattern, and ``MAX_PROGRAM_SIZE`` RE2 instructions (a 400 naming
  ``pattern`` says how many it has; ``.*`` instead of a counted repetition is what to write);
- ``MAX_PATTERNS_PER_PROJECT`` open known issues with a pattern per project
  (``tms.failures.known_issues.service``);
- a pattern sees the first ``MAX_SUBJECT`` characters of the message, a newline and the stack
  (a text cut there ends with ``CUT_MARK``, a NUL, so that ``$`` does not match at the cut);
- a write spends at most ``MATCH_BUDGET_SECONDS`` matching (``tms.failures.known_issues.service.Matcher``),
  and ingest spends it in a worker thread before its write transaction. RE2 releases the GIL while
  it searches, so the event loop keeps serving meanwhile.

``PatternSet`` matches all the patterns of a project in one pass per failure: RE2 ``Set``s of
``SET_CHUNK`` patterns each (one DFA walk over the text per chunk), checked in creation order so the
first chunk with a match gives the oldest matching pattern. A Set has no fallback of its own when its
DFA runs out of memory (it answers "no match"), so each chunk carries an always-matching sentinel:
a Set answer without it means the DFA gave up, and that chunk's patterns are searched one by one
(each search falls back to RE2's NFA, linear in text x program size).

Measured on one core: 200 ordinary patterns (literals, classes, ``.*``) cost about 0.02 ms per 4 KB
failure through the Sets (0.9 ms one by one); 200 patterns at the program-size limit cost about 0.7 s
for the first 4 KB text (building DFA states) and far less for texts alike, which is what the budget
is for.
"""

from __future__ import annotations

import time
from functools import lru_cache

import re2

from tms.errors import InvalidInput

MAX_PATTERN = 500
# RE2 program instructions of one pattern: ordinary patterns have 20 to 200, \p{L}+ has 1,201;
# .{0,220}Q has 1,985 and .{0,1000}.{0,1000}.{0,1000}Q 27,005
MAX_PROGRAM_SIZE = 2_000
# what a pattern sees: this many characters of message + "\n" + stack
MAX_SUBJECT = 4_096
# open known issues with a pattern in one project (tms.failures.known_issues.service checks it on create/PATCH)
MAX_PATTERNS_PER_PROJECT = 200
# seconds of pattern matching one write of results may spend; past it the rest keep no known-issue bug
MATCH_BUDGET_SECONDS = 0.5
# patterns per RE2 Set: small enough that one Set's first search over a text stays ~0.1 s at worst
SET_CHUNK = 32
# RE2's memory budget per compiled pattern and per Set (its DFA cache lives within it)
_MAX_MEM = 1 << 20
_SET_MAX_MEM = 4 << 20


def _options(max_mem: int = _MAX_MEM) -> re2.Options:
    options = re2.Options()
    options.max_mem = max_mem
    options.log_errors = False
    return options


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re2._Regexp:
    """The compiled pattern; raises InvalidInput (field ``pattern``) when RE2 refuses it or its program
    is over MAX_PROGRAM_SIZE."""
    if not pattern or len(pattern) > MAX_PATTERN:
        raise InvalidInput(f"pattern must be 1 to {MAX_PATTERN} characters", field="pattern")
    try:
        compiled = re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise InvalidInput(f"pattern is not a regular expression this service can run in linear time: {reason}",
                           field="pattern") from None
    size = compiled.programsize
    if size > MAX_PROGRAM_SIZE:
        raise InvalidInput(
            f"pattern is too costly to match: its RE2 program has {size:,} instructions, at most "
            f"{MAX_PROGRAM_SIZE:,} are allowed (a counted repetition such as .{{0,1000}} is one copy per "
            "count: write .* instead)", field="pattern")
    return compiled


def acceptable(pattern: str) -> bool:
    """Whether a stored pattern passes today's rules (one stored before a stricter rule never matches)."""
    try:
        compile_pattern(pattern)
    except InvalidInput:
        return False
    return True


# ends a text cut at MAX_SUBJECT: the cut is not the end of the failure, so $ must not match there
CUT_MARK = "\x00"


def subject(message: str | None, stack: str | None) -> str:
    """What a pattern is matched against: the message, a newline, the stack; cut at MAX_SUBJECT
    characters, and then ended by CUT_MARK (so ``^(a+)+$`` does not match a long run of ``a`` cut short)."""
    head = (message or "")[:MAX_SUBJECT + 1]  # cut first: an 8 MB message is never copied whole
    text = head + "\n" + (stack or "")[:MAX_SUBJECT]
    return text if len(text) <= MAX_SUBJECT else text[:MAX_SUBJECT] + CUT_MARK


def matches(pattern: str, message: str | None, stack: str | None) -> bool:
    try:
        compiled = compile_pattern(pattern)
    except InvalidInput:
        return False  # stored before a stricter rule: never matches rather than failing a write
    return compiled.search(subject(message, stack)) is not None


class OverBudget(Exception):
    """The deadline passed before a text's match was known."""


class _Chunk:
    """Up to SET_CHUNK patterns as one RE2 Set plus a sentinel, or one by one when the Set cannot be
    built within its memory."""

    def __init__(self, patterns: list[str], offset: int) -> None:
        self.offset = offset
        self.patterns = patterns
        self.set: re2.Set | None = re2.Set.SearchSet(_options(_SET_MAX_MEM))
        try:
            for pattern in patterns:
                self.set.Add(pattern)
            self.sentinel = self.set.Add("")  # matches every text: its absence means the DFA gave up
            self.set.Compile()
        except re2.error:
            self.set = None

    def first(self, text: str, deadline: float) -> int | None:
        """Index (in the whole PatternSet) of the oldest pattern of this chunk matching ``text``."""
        if self.set is not None:
            found = self.set.Match(text) or []
            if self.sentinel in found:
                hits = [index for index in found if index != self.sentinel]
                return self.offset + min(hits) if hits else None
        for index, pattern in enumerate(self.patterns):
            if time.perf_counter() > deadline:
                raise OverBudget
            if compile_pattern(pattern).search(text) is not None:
                return self.offset + index
        return None


class PatternSet:
    """Acceptable patterns (``acceptable``) in creation order, matched in one pass per chunk."""

    def __init__(self, patterns: list[str]) -> None:
        self.chunks = [_Chunk(patterns[start:start + SET_CHUNK], start)
                       for start in range(0, len(patterns), SET_CHUNK)]

    def first_match(self, text: str, deadline: float) -> int | None:
        """Index of the oldest pattern matching ``text`` (already cut by ``subject``), or None.
        Raises OverBudget when ``deadline`` (a ``time.perf_counter()`` value) passes first."""
        for chunk in self.chunks:
            if time.perf_counter() > deadline:
                raise OverBudget
            index = chunk.first(text, deadline)
            if index is not None:
                return index
        return None
