"""Failure fingerprints: one short hash per kind of failure, the same across runs.

A fingerprint is the SHA-256 (first 16 hex digits) of the *normalised* error message plus the top
``FRAMES`` frames of the stack that belong to the code under test. Normalising removes what changes
from one run to the next while the failure stays the same:

- memory addresses (``0x7f42a8bbe290``) -> ``<addr>``; uuids -> ``<uuid>``; cuids -> ``<id>``; other long
  hex strings (hashes, request ids) -> ``<hex>``
- timestamps and dates (ISO 8601, ``12:04:05``) -> ``<ts>``
- quoted values (``'abc'``, ``"abc"``, JUnit's ``<abc>``) -> ``'<v>'``; numbers -> ``<n>`` (so line and
  column numbers, durations, counts and ports all go)
- temp paths (``/tmp/...``, ``/var/folders/...``, ``C:\\Users\\x\\AppData\\Local\\Temp\\...``) -> ``<tmp>``;
  other paths keep only their file name (a checkout in /home/runner/work or /builds is the same code)

Frames of test frameworks and language runtimes (junit, jest-circus, pytest, node internals,
``java.lang.reflect``, the Go runtime, NUnit/xUnit) are skipped: the frames that tell failures apart
are the ones of the code under test. docs/failures.md shows examples from real frameworks.

Pure and bounded: the message is read up to ``MAX_MESSAGE`` characters and the stack up to
``MAX_STACK``, so the work per failure is a few regex passes over at most a few kilobytes.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from tms.runs.statuses import FAILING

FRAMES = 2
MAX_MESSAGE = 2_000
MAX_STACK = 16_000
MAX_LINES = 60  # the top frames are near the top: the rest of a deep stack (or a recursion) is not read
FINGERPRINTED = FAILING

# Every pattern starts with a literal or a character class, so the regex engine scans for its first
# character in C instead of trying the whole pattern at each position (``\b`` or a look-behind first
# would disable that); the boundary checks come right after the first character.
_TMP_PATH = re.compile(
    r"(?:[A-Za-z]:\\Users\\[^\\\s]+\\AppData\\Local\\Temp|/private/var/folders|/var/folders|/private/tmp|/tmp"
    r"|/var/tmp|/dev/shm)[\\/][^\s:'\"()<>,;]*"
)
_ADDR = re.compile(r"0x[0-9a-fA-F]+\b")
_UUID = re.compile(r"[0-9a-fA-F](?<![\w][0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}\b")
_CUID = re.compile(r"c(?<!\wc)(?=[a-z]*[0-9])[a-z0-9]{20,31}\b")
_HEX = re.compile(r"[0-9a-fA-F](?<!\w[0-9a-fA-F])[0-9a-fA-F]{7,}\b")
_TIMESTAMP = re.compile(
    r"\d(?<!\w\d)\d{3}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\d(?<!\w\d)\d?:\d{2}:\d{2}(?:[.,]\d+)?\b"
)
_SINGLE = re.compile(r"'(?<![\w'\"]')[^'\n]{0,300}'(?![\w'])")
_DOUBLE = re.compile(r'"(?<![\w"\']")[^"\n]{0,300}"(?![\w"])')
_ANGLE = re.compile(r"<[^<>\n]{0,300}>")
# not inside a name: opentest4j, sha256 keep their digits
_NUMBER = re.compile(r"\d(?<![A-Za-z_0-9]\d)\d*(?:\.\d+)?")
# tokens are split at whitespace, quotes, brackets and separators; one holding a slash is a path
_TOKENS = re.compile(r"([\s'\"()<>\[\]{},;=]+)")
_SLASHES = re.compile(r"[\\/]")

# stack lines that are frames, per family of languages
_FRAME = re.compile(
    r"^\s*(?:"
    r"at\s+\S"                                   # Java, JavaScript, .NET, Kotlin
    r"|File\s+\"[^\"]+\",\s+line\s+\d+"          # Python traceback
    r"|\S+\.(?:py|go|rb|php|rs|cs|java|kt|js|ts|mjs|cjs|tsx|jsx|swift|scala):\d+"  # pytest, Go, Ruby, PHP
    r"|#\d+\s+\S"                                # PHP, gdb
    r")"
)
# substrings of frames of test frameworks and runtimes (plain `in` checks: far cheaper than one regex)
_SKIPPED_FRAME = (
    "node_modules", "node:", "<anonymous>", "internal/", "Promise.all", "jest-circus", "jest-runner",
    "org.junit", "org.opentest4j", "junit.framework", "org.testng", "org.apache.maven", "sun.reflect",
    "jdk.internal", "java.lang.reflect", "java.lang.Thread.run", "java.util.", "java.base/", "kotlin.",
    "_pytest", "pluggy", "site-packages", "unittest/", "/usr/lib/python",
    "testing/testing.go", "runtime/", "runtime.", "NUnit.Framework", "Xunit.", "Microsoft.VisualStudio",
    "System.Runtime", "System.Reflection", "/gems/", "phpunit/",
)
_DIGIT = re.compile(r"\d")
# cheap tests run before the costly passes: each is implied by any match of its pass, so a text that
# fails it cannot change under that pass (a timestamp holds digit, separator, two digits, separator, two
# digits; a run _hex replaces holds a digit next to a hex letter)
_TIMESTAMP_HINT = re.compile(r"\d[-:]\d\d[-:]\d\d")
_HEX_HINT = re.compile(r"[0-9][a-fA-F]|[a-fA-F][0-9]")
_PYTHON_FRAME = re.compile(r'^[ \t]*(?:File\s+"[^"]+",\s+line\s+\d+|\S+\.py:\d+: )', re.MULTILINE)
_PY_FILE = re.compile(r'File\s+"([^"]+)",\s+line\s+(\d+),\s+in\s+(\S+)')
# lines of runner chatter that name the test or its timing, not the failure (Go, Robot)
_CHATTER = re.compile(r"^\s*(?:=== (?:RUN|CONT|PAUSE|NAME)|--- (?:FAIL|PASS|SKIP)|PASS$|FAIL$|ok\s)")


def normalise(text: str) -> str:
    """The text with everything that varies between runs of the same failure taken out.

    Each pass runs only when the text holds the character it needs (most frames hold no quote, no
    ``0x``, no path): the regexes are the cost of fingerprinting and most of them find nothing.
    """
    digits = _DIGIT.search(text) is not None
    if "tmp" in text or "folders" in text or "Temp" in text:
        text = _TMP_PATH.sub("<tmp>", text)
    if digits:
        if "0x" in text:
            text = _ADDR.sub("<addr>", text)
        if "-" in text:
            text = _UUID.sub("<uuid>", text)
        if ("-" in text or ":" in text) and _TIMESTAMP_HINT.search(text):
            text = _TIMESTAMP.sub("<ts>", text)
    if "'" in text:
        text = _SINGLE.sub("'<v>'", text)
    if '"' in text:
        text = _DOUBLE.sub("'<v>'", text)
    if "<" in text:
        text = _ANGLE.sub(_angle, text)
    if "/" in text or "\\" in text:
        text = _basenames(text)
    if digits:
        if "c" in text:
            text = _CUID.sub("<id>", text)
        if _HEX_HINT.search(text):
            text = _HEX.sub(_hex, text)
        text = _NUMBER.sub("<n>", text)
    return " ".join(text.split())


def _angle(match: re.Match[str]) -> str:
    value = match.group(0)
    if value in ("<addr>", "<uuid>", "<ts>", "<tmp>", "<v>"):  # placeholders of the passes before
        return value
    return "'<v>'"


def _hex(match: re.Match[str]) -> str:
    """Long hex runs holding both digits and letters (hashes, ids); plain numbers and words stay."""
    value = match.group(0)
    if value.isdigit() or value.isalpha():
        return value
    return "<hex>"


def _basenames(text: str) -> str:
    """Every token holding a slash keeps only its last segment: /home/ci/app/src/cart.test.js:11:19 ->
    cart.test.js:11:19 (a checkout in /home/runner/work or /builds is the same code)."""
    parts = _TOKENS.split(text)
    for index in range(0, len(parts), 2):  # even items are tokens, odd ones the separators between
        part = parts[index]
        if "/" in part or "\\" in part:
            parts[index] = _SLASHES.split(part.rstrip("\\/"))[-1] or part
    return "".join(parts)


_BLANK, _SKIP, _KEEP, _OTHER = 0, 1, 2, 3
# Stack lines repeat across the failures of a run (framework frames, shared helpers): each distinct line
# is classified once, and normalised once if it is a frame that counts. Bounded: cleared when it grows
# past _LINE_CACHE_SIZE entries.
_LINE_CACHE: dict[str, tuple[int, str]] = {}
_MESSAGE_CACHE: dict[str, str] = {}  # the same for messages (normalised), within the same bound
_LINE_CACHE_SIZE = 50_000


def _line(line: str) -> tuple[int, str]:
    known = _LINE_CACHE.get(line)
    if known is not None:
        return known
    bare = line.strip()
    if not bare or (bare[0] in "=-PFo" and _CHATTER.match(bare)):
        kind, text = _BLANK, ""
    elif bare.startswith(("at ", "File ", "#")) or (":" in bare and _FRAME.match(bare)):
        if any(part in bare for part in _SKIPPED_FRAME):
            kind, text = _SKIP, ""
        else:
            # a file name is what identifies a Python frame: keep it out of the quoted-value rule
            kind, text = _KEEP, normalise(_PY_FILE.sub(r"\1:\2 in \3", bare) if bare[0] == "F" else bare)
    else:
        # normalised only if the stack turns out to have no frame at all (top_frames): most never are
        kind, text = _OTHER, bare
    if len(_LINE_CACHE) >= _LINE_CACHE_SIZE:
        _LINE_CACHE.clear()
    _LINE_CACHE[line] = (kind, text)
    return kind, text


def top_frames(stack: str, count: int = FRAMES) -> list[str]:
    """The first ``count`` frames of the code under test, normalised; when the stack has no line that
    looks like a frame (a Go ``t.Errorf`` output, an assertion text), its first meaningful lines."""
    frames: list[str] = []
    others: list[str] = []
    stack = stack[:MAX_STACK]
    # Python prints the most recent call last (tracebacks and pytest alike): read its last lines, bottom
    # up; the others print it first: read the first lines. Only MAX_LINES are split off either way.
    if ('File "' in stack or ".py:" in stack) and _PYTHON_FRAME.search(stack):
        lines = stack.rsplit("\n", MAX_LINES)[-MAX_LINES:]
        lines.reverse()
    else:
        lines = stack.split("\n", MAX_LINES)[:MAX_LINES]
    for line in lines:
        kind, text = _line(line)
        if kind == _KEEP:
            frames.append(text)
            if len(frames) == count:
                break
        elif kind == _OTHER and not frames and len(others) < count:
            others.append(text)
    return frames or [normalise(text) for text in others]


@lru_cache(maxsize=4096)
def fingerprint(message: str | None, stack: str | None, frames: int = FRAMES) -> str:
    """16 hex digits naming the failure.

    Cached: one ingest often repeats the same error text in many tests (a service down, a fixture
    broken), and the same text always gives the same answer.
    """
    text = (message or "")[:MAX_MESSAGE]
    if "\n" in text or _CHATTER.match(text):
        text = "\n".join(line for line in text.splitlines() if not _CHATTER.match(line))
    head = _MESSAGE_CACHE.get(text)
    if head is None:
        # many failures of one run share their message (a service down) while their stacks differ
        if len(_MESSAGE_CACHE) >= _LINE_CACHE_SIZE:
            _MESSAGE_CACHE.clear()
        head = _MESSAGE_CACHE[text] = normalise(text)
    tail = top_frames(stack, frames) if stack else []
    if head and tail and tail[0] == head:
        tail = tail[1:]  # a stack that starts by repeating the message (Java, .NET, jest)
    # a failure without any error text still gets one, EMPTY: it names no cause, so it groups nothing
    text = "\n".join([head, *tail])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# The fingerprint of a failure that says nothing (no message, no stack; a manual failure without a failed
# step or a note): stored like any other, so every failed row keeps one, but it names no cause. It never
# forms a cluster (each such failure is listed alone), never counts as a first-seen or daily failure and
# never becomes, or matches, a known issue by fingerprint (it would take every such failure).
EMPTY = fingerprint(None, None)


def of_result(status: str, message: str | None, stack: str | None) -> str | None:
    """The fingerprint a result with this status stores: only FAILED and BROKEN results get one."""
    if status not in FINGERPRINTED:
        return None
    return fingerprint(message, stack)


def of_manual(step: str | None, step_note: str | None, comment: str | None) -> str:
    """A manual failure's fingerprint: the text of its failed step (keyword and text) and the tester's
    note on that step, or the result's comment when the step has none, each normalised like a message
    (numbers, quoted values, ids go). Two cases failing at the same step ("Given I am signed in") share
    one; a failure with neither step nor note is EMPTY."""
    note = step_note if step_note and step_note.strip() else comment
    parts = [f"step: {normalise(step[:MAX_MESSAGE])}" if step and step.strip() else "",
             normalise(note[:MAX_MESSAGE]) if note and note.strip() else ""]
    if not any(parts):
        return EMPTY
    # "manual" first: a manual failure never shares a fingerprint with an error message by accident
    text = "\n".join(["manual", *parts])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
