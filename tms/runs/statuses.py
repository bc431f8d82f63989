"""The result statuses, their words and their colours: the one list (issue 23).

The API keeps SPEC.md's values (``PASSED FAILED BROKEN SKIPPED UNKNOWN``); people read words. One word per
concept everywhere a person reads a status (pages, reports, charts, PDF, CSV headers): BROKEN is
"Blocked", and UNKNOWN is "Untested" (a result nobody has set yet, the rows a run is filled with) except
where an automated tool reported it as such ("Unknown": it ran, the tool could not tell). Every module
that names the statuses, counts them or colours them imports them from here; templates use the
``status_label`` filter and the ``RESULT_STATUSES`` global registered once in ``tms.app``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

ResultStatus = Literal["PASSED", "FAILED", "BROKEN", "SKIPPED", "UNKNOWN"]
# in this order everywhere: bars stack, tabs and columns read left to right
RESULT_STATUSES: tuple[str, ...] = get_args(ResultStatus)
# a failure in the sense of clusters, flaky flips, "Create issue" and retests
FAILING: frozenset[str] = frozenset(("FAILED", "BROKEN"))

LABELS: dict[str, str] = {"PASSED": "Passed", "FAILED": "Failed", "BROKEN": "Blocked", "SKIPPED": "Skipped",
                          "UNKNOWN": "Untested"}
# UNKNOWN written by a tool (ingest, CTRF "other"): it ran, but its outcome is unknown
AUTOMATED_UNKNOWN = "Unknown"
COLORS: dict[str, str] = {"PASSED": "#1a7f37", "FAILED": "#cf222e", "BROKEN": "#bc4c00", "SKIPPED": "#8c959f",
                          "UNKNOWN": "#d0d7de"}
# other enum values pages show through the same filter, kept as written (a case's layer "UI", not "Ui")
ACRONYMS = frozenset(("UI", "API", "E2E", "CI"))
# the keys of a counts object (RunCounts, reports' Counts, ...) holding each status's number
COUNT_KEYS: dict[str, str] = {status: status.lower() for status in RESULT_STATUSES}


def label(status: str | None, source: str | None = None) -> str:
    """The word a person reads for a result status; ``source`` "automated" (a result's source or a run's
    kind) makes UNKNOWN "Unknown". Any other value (a run's or a case's status) reads as its words."""
    if status is None:
        return ""
    if status == "UNKNOWN" and source == "automated":
        return AUTOMATED_UNKNOWN
    if status in LABELS:
        return LABELS[status]
    return status if status in ACRONYMS else str(status).replace("_", " ").lower().capitalize()


def counted(counts: Any) -> list[tuple[str, int]]:
    """(status, number) of a counts object in the statuses' order."""
    return [(status, int(getattr(counts, key) or 0)) for status, key in COUNT_KEYS.items()]


def rgb(status: str) -> tuple[int, int, int]:
    """A status's colour as (r, g, b), for the PDF."""
    value = COLORS[status].lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
