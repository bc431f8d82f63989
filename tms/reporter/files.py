"""Which files the REPORT arguments name, and what each one is (by content, never by extension)."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from tms.reporter.model import ReportError

JUNIT = "junit"
CUCUMBER = "cucumber"
_GLOB_CHARS = set("*?[")


class NoReports(Exception):
    """The arguments name no report: a usage error, told before anything is parsed."""


@dataclass(frozen=True, slots=True)
class Report:
    path: str
    format: str  # JUNIT or CUCUMBER


def expand(arguments: list[str]) -> tuple[list[str], list[str]]:
    """Files named by the arguments (a file, a directory searched recursively for *.xml and *.json,
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
                warnings.append(f"{argument}: directory holds no .xml or .json file")
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
    found = []
    for root, dirs, names in os.walk(directory):
        dirs.sort()
        dirs[:] = [d for d in dirs if d not in ("node_modules", ".git")]
        found.extend(os.path.join(root, n) for n in sorted(names) if n.lower().endswith((".xml", ".json")))
    return found


def detect(path: str) -> str | None:
    """JUNIT when the file starts (after a BOM, blanks and comments) with XML, CUCUMBER with a JSON
    array; None otherwise."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    if head.startswith((b"\xff\xfe<\x00", b"\xfe\xff\x00<", b"<\x00", b"\x00<")):
        return JUNIT  # UTF-16 XML (some Windows tools): the XML parser reads its encoding itself
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    if text.startswith(b"<"):
        return JUNIT
    if text.startswith(b"["):
        return CUCUMBER
    return None


def classify(paths: list[str], explicit: set[str]) -> tuple[list[Report], list[str]]:
    """Reports among the files. A file named outright must be a report; one found in a directory or
    by a glob that is neither XML nor a JSON array (a package.json, say) is skipped with a note."""
    reports: list[Report] = []
    skipped: list[str] = []
    for path in paths:
        kind = detect(path)
        if kind is None:
            if path in explicit:
                raise ReportError(path, "not a JUnit XML or Cucumber JSON report (neither XML nor a JSON array)", 1)
            skipped.append(path)
            continue
        reports.append(Report(path, kind))
    return reports, skipped
