"""Known-issue patterns: user-written regular expressions, compiled and matched so none can stall ingest.

Python's ``re`` backtracks: ``(a+)+$`` against forty ``a`` and a ``b`` runs for minutes, and a thread
with a timeout cannot interrupt it (the GIL is held inside the C matcher). So patterns run on RE2
(google-re2), which matches in time linear in the input and refuses the constructs that need
backtracking (backreferences, look-around) at compile time, with a clear message. On top of that:
patterns are at most ``MAX_PATTERN`` characters, RE2's program size is capped, and the text a pattern
sees is at most ``MAX_SUBJECT`` characters (the message, then the start of the stack).
"""

from __future__ import annotations

from functools import lru_cache

import re2

from tms.services.errors import InvalidInput

MAX_PATTERN = 500
MAX_SUBJECT = 8_000
# RE2's memory budget per compiled pattern: a pattern whose automaton needs more is refused
_MAX_MEM = 1 << 20


def _options() -> re2.Options:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False
    return options


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> re2._Regexp:
    """The compiled pattern; raises InvalidInput (field ``pattern``) when RE2 refuses it."""
    if not pattern or len(pattern) > MAX_PATTERN:
        raise InvalidInput(f"pattern must be 1 to {MAX_PATTERN} characters", field="pattern")
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise InvalidInput(f"pattern is not a regular expression this service can run in linear time: {reason}",
                           field="pattern") from None


def subject(message: str | None, stack: str | None) -> str:
    """What a pattern is matched against: the message, a newline, the stack; cut at MAX_SUBJECT."""
    text = (message or "") + "\n" + (stack or "")
    return text[:MAX_SUBJECT]


def matches(pattern: str, message: str | None, stack: str | None) -> bool:
    try:
        compiled = compile_pattern(pattern)
    except InvalidInput:
        return False  # stored before a stricter rule: never matches rather than failing a write
    return compiled.search(subject(message, stack)) is not None
