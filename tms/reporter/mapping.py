"""From parsed tests to ingest result items: the `@service('CODE')` link, titles, comments.

Rules (docs/reporter.md repeats them for users):

- A test links to library case CODE through `@service('CODE')` or `@service("CODE")` anywhere in its
  name, its classname, a suite name on its path, or as a Cucumber tag; or through a
  `<property name="service" value="CODE"/>` on the testcase (several codes: several properties, or
  one value separated by commas or spaces).
- A test with two codes yields two results, one per case.
- A test with no code is sent unlinked, titled with its full path: suite path, classname, name.
- Several tests linked to the same case are sent as one result for that case, the worst status
  deciding (FAILED > BROKEN > UNKNOWN > PASSED > SKIPPED): the service keeps one result per case and
  run, so sending them apart would let the last one silently overwrite a failure. The comment names
  each test with its status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tms.reporter.model import STATUSES, TestOutcome, paused_gc

SERVICE_TAG = re.compile(r"""@service\(\s*(['"])\s*([^'"\s()]+)\s*\1\s*\)""", re.IGNORECASE)
# behave drops the quotes of a tag's double-quoted argument: @service("X") arrives as service(X)
BARE_TAG = re.compile(r"""^@service\(\s*([^'"\s()]+)\s*\)$""", re.IGNORECASE)
TITLE_SEPARATOR = " > "
MAX_TITLE = 500  # the service keeps titles up to 500 characters
MAX_COMMENT = 8000
_RANK = {status: rank for rank, status in enumerate(STATUSES)}


@dataclass(slots=True)
class Item:
    """One ingest result with the tests it stands for (for the summary and the rejected list)."""

    result: dict[str, Any]
    title: str
    tests: list[TestOutcome] = field(default_factory=list)

    @property
    def code(self) -> str | None:
        return self.result.get("test_case_code")


def codes_of(outcome: TestOutcome) -> list[str]:
    """Every case code the test names, first appearance first, each once."""
    codes: list[str] = []
    for text in (outcome.name, outcome.classname):
        if text and "@" in text and "@service" in text.lower():
            codes.extend(match.group(2) for match in SERVICE_TAG.finditer(text))
    if outcome.suite_path:
        codes.extend(_texts_codes(outcome.suite_path))
    if outcome.tags:
        codes.extend(_tags_codes(outcome.tags))
    for value in outcome.service_properties:
        found = [m.group(2) for m in SERVICE_TAG.finditer(value)]
        codes.extend(found or [v for v in re.split(r"[\s,;]+", value) if v])
    return list(dict.fromkeys(codes)) if codes else codes


@lru_cache(maxsize=4096)  # tests share their suite path and their tags: each tuple is read once
def _texts_codes(texts: tuple[str, ...]) -> tuple[str, ...]:
    codes: list[str] = []
    for text in texts:
        if text and "@" in text and "@service" in text.lower():
            codes.extend(match.group(2) for match in SERVICE_TAG.finditer(text))
    return tuple(codes)


@lru_cache(maxsize=4096)
def _tags_codes(tags: tuple[str, ...]) -> tuple[str, ...]:
    """`@service('X')` in the tags, then the tags that are `@service(X)` (behave drops the quotes)."""
    codes = list(_texts_codes(tags))
    for tag in tags:
        bare = BARE_TAG.match(tag)
        if bare:
            codes.append(bare.group(1))
    return tuple(codes)


def title_of(outcome: TestOutcome) -> str:
    """Suite path, classname and name joined, tags taken out, repeats dropped (Surefire names the
    suite after the class; jest-junit repeats the describe blocks in the classname)."""
    suite_path = outcome.suite_path
    name = outcome.name
    if suite_path:
        # jest-junit writes "<describe> <test>" as both classname and name
        name = name.removeprefix(suite_path[-1] + " ")
    head = _head(suite_path, outcome.classname or "")
    last = _clean(name)
    if last and (not head or last != head[-1]):
        title = TITLE_SEPARATOR.join((*head, last))
    else:
        title = TITLE_SEPARATOR.join(head)
    title = title or outcome.name
    if len(title) <= MAX_TITLE:
        return title
    if last and len(last) <= MAX_TITLE // 2:
        # the path is cut, never the test's own name: "Shop.Tests.Very.Long.Names…  > pays by card"
        head_room = MAX_TITLE - len(last) - len(TITLE_SEPARATOR) - 1
        return title[: len(title) - len(last) - len(TITLE_SEPARATOR)][:head_room] + "…" + TITLE_SEPARATOR + last
    return title[: MAX_TITLE - 1] + "…"


@lru_cache(maxsize=65536)  # the tests of a class share it
def _head(suite_path: tuple[str, ...], classname: str) -> tuple[str, ...]:
    """A title's parts before the test's own name: the suite path and the classname, cleaned."""
    if suite_path:
        classname = classname.removeprefix(suite_path[-1] + " ")
        if classname and _names_suites(classname, suite_path):
            classname = ""  # Robot Framework: classname "Top.Child" repeats the suite path
    parts: list[str] = []
    for raw in (*_clean_path(suite_path), _clean(classname)):
        if raw and (not parts or raw != parts[-1]):
            parts.append(raw)
    return tuple(parts)


# Where a tag stood: a bracket or parenthesis left holding nothing else goes (pytest's
# "test_login[@service('X')]" becomes "test_login"), and so does the separator next to it
# ("test_login[@service('X')-chrome]" becomes "test_login[chrome]").
_MARK = "\0"
_EMPTIED = re.compile(r"\[[\s,\-]*\0[\s,\-\0]*\]|\([\s,\-]*\0[\s,\-\0]*\)")
_MARK_AND_SEPARATORS = re.compile(r"([\s,\-]*)\0([\s,\-]*)")


def _one_separator(match: re.Match[str]) -> str:
    """A tag between two parts leaves one separator ("a-X-b" -> "a-b"); at an edge, none."""
    left, right = match.group(1), match.group(2)
    if left and right:
        return ((left + right).replace(" ", "") or " ")[0]
    return "" if left or right else " "


def _clean(text: str) -> str:
    if "@" in text:
        marked = SERVICE_TAG.sub(_MARK, text.replace(_MARK, ""))
        if _MARK in marked:
            marked = _MARK_AND_SEPARATORS.sub(_one_separator, _EMPTIED.sub("", marked))
        return " ".join(marked.split())
    return text.strip()


@lru_cache(maxsize=4096)  # every case of a suite shares its path
def _clean_path(suite_path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_clean(name) for name in suite_path)


@lru_cache(maxsize=65536)
def _names_suites(classname: str, suite_path: tuple[str, ...]) -> bool:
    """Robot writes classname "Top.Child" for suites Top > Child, PHPUnit "A.B" for suite "A\\B"."""
    dotted = [_SEPARATORS.sub(".", name) for name in suite_path]
    return any(classname == ".".join(dotted[i:]) for i in range(len(dotted)))


_SEPARATORS = re.compile(r"[\\/]+|::")


def comment_of(outcome: TestOutcome) -> str:
    lines = []
    if outcome.attempts:
        sequence = [*outcome.attempts, outcome.status]
        lines.append(f"attempts: {len(sequence)} ({', '.join(sequence)})")
        if outcome.status == "PASSED" and any(s in ("FAILED", "BROKEN") for s in outcome.attempts):
            lines.append("flaky: passed only on retry")
    lines.extend(outcome.notes)
    return "\n".join(lines)


@paused_gc
def to_items(outcomes: list[TestOutcome]) -> list[Item]:
    """The ingest results, in report order: linked ones per case (combined), unlinked ones per test."""
    items: list[Item] = []
    by_code: dict[str, int] = {}
    for outcome in outcomes:
        title = title_of(outcome)
        codes = codes_of(outcome)
        if not codes:
            items.append(Item(_result(outcome, title, None), title, [outcome]))
            continue
        for code in codes:
            index = by_code.get(code)
            if index is None:
                by_code[code] = len(items)
                items.append(Item(_result(outcome, title, code), title, [outcome]))
            else:
                items[index].tests.append(outcome)
    for item in items:
        if len(item.tests) > 1:
            _combine(item)
    return items


def _result(outcome: TestOutcome, title: str, code: str | None) -> dict[str, Any]:
    # absent rather than null: the service is sent only what a report said
    result: dict[str, Any] = {"test_case_code": code} if code else {}
    result["title"] = title
    result["status"] = outcome.status
    if outcome.attempts or outcome.notes:
        result["comment"] = _cap(comment_of(outcome), MAX_COMMENT)
    if outcome.attempts:
        # earlier attempts' statuses: the service reads "passed only on retry" from them (flaky evidence)
        result["attempts"] = list(outcome.attempts[-50:])
    if outcome.duration_ms is not None:
        result["duration_ms"] = outcome.duration_ms
    if outcome.framework:
        result["framework"] = outcome.framework
    if outcome.error_message:
        result["error_message"] = outcome.error_message
    if outcome.error_stack:
        result["error_stack"] = outcome.error_stack
    if outcome.executed_at:
        result["executed_at"] = outcome.executed_at
    if outcome.location_file:
        result["file"] = outcome.location_file
    if outcome.location_line:
        result["line"] = outcome.location_line
    return result


def _combine(item: Item) -> None:
    tests = item.tests
    worst = min(tests, key=lambda t: _RANK.get(t.status, _RANK["UNKNOWN"]))
    code = item.code
    item.title = f"{title_of(tests[0])} (+{len(tests) - 1} more)"
    combined = _result(worst, item.title, code)
    durations = [t.duration_ms for t in tests if t.duration_ms is not None]
    if durations:
        combined["duration_ms"] = sum(durations)
    else:
        combined.pop("duration_ms", None)
    moments = [t.executed_at for t in tests if t.executed_at]
    if moments:
        combined["executed_at"] = min(moments)
    lines = [f"{len(tests)} tests link to {code}; the worst status counts:"]
    for test in tests:
        lines.append(f"- {test.status} {title_of(test)}")
        extra = comment_of(test)
        if extra:
            lines.extend(f"    {line}" for line in extra.splitlines())
    combined["comment"] = _cap("\n".join(lines), MAX_COMMENT)
    item.result = combined


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
