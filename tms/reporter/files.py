"""Which files the REPORT arguments name, and what each one is (by content: tms.reporter.detect)."""

from __future__ import annotations

import contextlib
import glob
import os
from dataclasses import dataclass, field

from tms.reporter.detect import ALLURE, CUCUMBER, FORMATS, JUNIT, detect, detect_head, read_head
from tms.reporter.model import ReportError

__all__ = ["CUCUMBER", "FORMATS", "JUNIT", "NoReports", "Report", "classify", "detect", "expand"]
_GLOB_CHARS = set("*?[")
# what a directory is searched for (a file named outright may have any name)
REPORT_EXTENSIONS = (".xml", ".json", ".trx", ".jsonl", ".ndjson")


class NoReports(Exception):
    """The arguments name no report: a usage error, told before anything is parsed."""


@dataclass(frozen=True, slots=True)
class Report:
    path: str
    format: str  # one of detect.FORMATS
    # an Allure result's whole content when detection read all of it: its parser need not read it again
    content: bytes | None = field(default=None, compare=False, repr=False)


def expand(arguments: list[str]) -> tuple[list[str], list[str]]:
    """Files named by the arguments (a file, a directory searched recursively for
    *.xml, *.json, *.trx, *.jsonl and *.ndjson,
    or a glob, `**` included), each once, in argument order then name order; and the warnings.

    A path that does not exist is an error; a glob that matches nothing only a warning, so one
    pattern for two report kinds does not fail a job that wrote only one of them.
    """
    files: list[str] = []
    warnings: list[str] = []
    for argument in arguments:
        if os.path.isdir(argument):
            found = _walk(argument)
            if not found:
                warnings.append(f"{argument}: directory holds no .xml, .json, .trx, .jsonl or .ndjson file")
            files.extend(found)
        elif os.path.isfile(argument):
            files.append(argument)
        elif _GLOB_CHARS & set(argument):
            matched = sorted(glob.glob(argument, recursive=True))
            found = []
            for match in matched:
                found.extend(_walk(match) if os.path.isdir(match) else [match])
            if not found:
                warnings.append(f"{argument}: no file matches")
            files.extend(found)
        else:
            raise NoReports(f"{argument}: no such file or directory")
    unique = list(dict.fromkeys(os.path.normpath(f) for f in files))
    if not unique:
        raise NoReports("no report file found in " + ", ".join(arguments))
    return unique, warnings


def _walk(directory: str) -> list[str]:
    found: list[str] = []
    for root, dirs, names in os.walk(directory):
        dirs.sort()
        dirs[:] = [d for d in dirs if d not in ("node_modules", ".git")]
        found.extend(os.path.join(root, n) for n in sorted(names) if n.lower().endswith(REPORT_EXTENSIONS))
    return found


def classify(paths: list[str], explicit: set[str], forced: str | None = None) -> tuple[list[Report], list[str]]:
    """Reports among the files, each with its format (`forced` when --format names one). A file named
    outright must be a report; one found in a directory or by a glob that is no report (a
    package.json, say) is skipped with a note."""
    reports: list[Report] = []
    skipped: list[str] = []
    for path in paths:
        head, whole, kind = b"", False, forced
        if forced is None:
            head, whole = read_head(path)
            kind = detect_head(path, head)
        elif forced == ALLURE:
            with contextlib.suppress(ReportError):  # its parser says so, in its place among the others
                head, whole = read_head(path)
        content = head if whole and kind == ALLURE else None
        if kind is None:
            if path in explicit:
                raise ReportError(path, "not a test report of a known format (" + ", ".join(FORMATS)
                                  + "); --format names one to read it as", 1)
            skipped.append(path)
            continue
        reports.append(Report(path, kind, content))
    return reports, skipped
