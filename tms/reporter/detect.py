"""Which report format a file holds, from its first bytes (never from its name alone).

XML: the root element's name (after the prolog, comments, processing instructions and a DOCTYPE):

| root element                    | format   |
|---------------------------------|----------|
| testsuites, testsuite           | junit    |
| TestRun                         | trx      |
| test-run, test-suite (NUnit 3)  | nunit    |
| assemblies, assembly            | xunit    |
| testng-results                  | testng   |
| robot                           | robot    |
| test-results (NUnit 2)          | nunit2   |

JSON: a top-level array is Cucumber; an object is read by its first keys: `"reportFormat": "CTRF"`
or `"results": {"tool": ...}` is CTRF; `"config"` with `"suites"` is Playwright; a `*-result.json`
with `"uuid"` (or `historyId`) anywhere in it is an Allure result, a `*-container.json` likewise an
Allure container (the whole file is read by its structure when its head does not show the keys);
`"stats": {...}` followed by `"tests": [` is mocha's JSON reporter; a first key `"num...Test..."`
(`numFailedTestSuites`, `numTotalTestSuites`) is `jest --json` or Vitest's json reporter;
`"version": "3.x"` followed by `"examples"`, `"messages"`, `"summary"` or `"seed"` is RSpec's json
formatter; a first line that is a JSON object with `"Action"` is `go test -json`, one starting with
`"protocolVersion"` is `dart test --reporter json` (its first lines, like go's, may be other output).
Each probe is anchored at the start of the file or of its first JSON line: detection costs the same
for every format, whatever the file's size. Anything else is not a report:
skipped when found in a directory (but a `*-result.json` in an Allure results folder is read as one,
so that a file it cannot read is an error, never skipped in silence), an error when named.
"""

from __future__ import annotations

import os
import re
from typing import Any

import msgspec

from tms.reporter.dart import looks_like_dart
from tms.reporter.gotest import looks_like_gotest
from tms.reporter.model import ReportError
from tms.reporter.reading import json_bytes

JUNIT, CUCUMBER, CTRF, PLAYWRIGHT, ALLURE = "junit", "cucumber", "ctrf", "playwright", "allure"
TRX, NUNIT, XUNIT, TESTNG, ROBOT, GOTEST = "trx", "nunit", "xunit", "testng", "robot", "gotest"
NUNIT2, MOCHA, JEST, RSPEC, DART = "nunit2", "mocha", "jest", "rspec", "dart"
FORMATS = (JUNIT, CUCUMBER, CTRF, PLAYWRIGHT, ALLURE, TRX, NUNIT, XUNIT, TESTNG, ROBOT, GOTEST,
           NUNIT2, MOCHA, JEST, RSPEC, DART)
NAMES = {
    JUNIT: "JUnit XML", CUCUMBER: "Cucumber JSON", CTRF: "CTRF JSON", PLAYWRIGHT: "Playwright JSON",
    ALLURE: "Allure result", TRX: "TRX", NUNIT: "NUnit 3 XML", XUNIT: "xUnit.net v2 XML", TESTNG: "TestNG XML",
    ROBOT: "Robot Framework output.xml", GOTEST: "go test -json", NUNIT2: "NUnit 2 XML", MOCHA: "mocha JSON",
    JEST: "jest/Vitest JSON", RSPEC: "RSpec JSON", DART: "dart test JSON",
}
HEAD_BYTES = 65536
_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)

_ROOTS = {
    "testsuites": JUNIT, "testsuite": JUNIT, "TestRun": TRX, "test-run": NUNIT, "test-suite": NUNIT,
    "assemblies": XUNIT, "assembly": XUNIT, "testng-results": TESTNG, "robot": ROBOT, "test-results": NUNIT2,
}
_SKIP_XML = re.compile(rb"\s*(<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)", re.S)
_ROOT = re.compile(rb"\s*<([A-Za-z_][\w.:-]*)")
_CTRF_FORMAT = re.compile(rb'"reportFormat"\s*:\s*"CTRF"')
_CTRF_RESULTS = re.compile(rb'\{\s*"results"\s*:\s*\{\s*"tool"')
_PLAYWRIGHT = re.compile(rb'^\{\s*"config"\s*:')
_ALLURE_KEYS = re.compile(rb'"(uuid|historyId)"\s*:')
# mocha's JSON reporter: a small flat "stats" object, then "tests" (mochawesome's "results" is not it)
_MOCHA = re.compile(rb'\{\s*"stats"\s*:\s*\{[^{}\[\]]{0,2000}\}\s*,\s*"tests"\s*:\s*\[')
# jest --json starts with "numFailedTestSuites", Vitest's json reporter with "numTotalTestSuites"
_JEST = re.compile(rb'\{\s*"num[A-Za-z]*Test(?:Suite)?s"\s*:')
_RSPEC = re.compile(rb'\{\s*"version"\s*:\s*"\d[^"\\]{0,40}"\s*,\s*"(?:examples|messages|summary|seed)"\s*:')


def read_head(path: str) -> tuple[bytes, bool]:
    """The file's first HEAD_BYTES, and whether that may be the whole file: fewer bytes came than were
    asked for. An Allure result nearly always is, and its parser then takes these bytes instead of
    opening the file a second time (reading it again only if they do not hold a whole document: a
    regular file's read is never short but at its end, yet that is not promised everywhere)."""
    try:
        descriptor = os.open(path, _READ)  # no file object: a results directory may hold 50,000 files
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        head = os.read(descriptor, HEAD_BYTES)
        if len(head) < HEAD_BYTES:
            return head, True
        return head, False
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(descriptor)


def detect(path: str) -> str | None:
    """The format of the file, or None when it is none of them."""
    return detect_head(path, read_head(path)[0])


def detect_head(path: str, head: bytes) -> str | None:
    """The format of the file whose first bytes (up to HEAD_BYTES) are `head`."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            head = head.decode("utf-16", errors="ignore").encode("utf-8")
        except UnicodeError:
            return None
    elif head[:4] in (b"<\x00?\x00", b"\x00<\x00?"):
        head = head.decode("utf-16-le" if head[0] == 0x3C else "utf-16-be", errors="ignore").encode("utf-8")
    head = head.removeprefix(b"\xef\xbb\xbf")
    text = head.lstrip()
    if text.startswith(b"<"):
        return _xml_root(text)
    if text.startswith(b"["):
        return CUCUMBER
    if not text.startswith(b"{"):  # go's and dart's first lines may be plain build output
        return GOTEST if looks_like_gotest(text) else DART if looks_like_dart(text) else None
    start = text[:4096]
    if (b'"reportFormat"' in start and _CTRF_FORMAT.search(start)) or _CTRF_RESULTS.match(text):
        return CTRF
    if _PLAYWRIGHT.match(text):
        return PLAYWRIGHT
    if _JEST.match(text):
        return JEST
    if _MOCHA.match(text):
        return MOCHA
    if _RSPEC.match(text):
        return RSPEC
    if text.startswith(b'{"protocolVersion"') or (b'"protocolVersion"' in text[:256] and looks_like_dart(text)):
        return DART
    # Allure before the go test probe, which decodes the first line (an Allure result's only one): a
    # results directory holds up to 50,000 such files. A go test event names its "Action" up front.
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if not name.endswith(ALLURE_NAMES):
        return GOTEST if looks_like_gotest(text) else None
    # wherever the keys are: allure-python writes `uuid` and `historyId` after `statusDetails` and
    # `steps`, so a failing test's long trace can push them past any fixed prefix
    if b'"Action"' not in start and (b'"uuid"' in text or b'"historyId"' in text) and _ALLURE_KEYS.search(text):
        return ALLURE
    if looks_like_gotest(text):
        return GOTEST
    return ALLURE if _allure_structure(path) else None


ALLURE_NAMES = ("-result.json", "-container.json")


class _AllureProbe(msgspec.Struct):
    """The keys that make a JSON object an Allure result or container (the rest is skipped, not built)."""

    uuid: Any = None
    historyId: Any = None
    status: Any = None
    name: Any = None
    children: Any = None


_ALLURE_PROBE = msgspec.json.Decoder(_AllureProbe)


def _allure_structure(path: str) -> bool:
    """The whole file (its head did not show the keys) is an Allure result or container by its shape."""
    try:
        with open(path, "rb") as handle:
            probe = _ALLURE_PROBE.decode(json_bytes(path, handle.read()))
    except (OSError, ReportError, msgspec.DecodeError):  # unreadable or malformed: the caller tells
        return False
    if not isinstance(probe.uuid, str) and not isinstance(probe.historyId, str):
        return False
    return probe.status is not None or probe.name is not None or isinstance(probe.children, list)


def _xml_root(text: bytes) -> str | None:
    position = 0
    while True:
        match = _SKIP_XML.match(text, position)
        if not match:
            break
        position = match.end()
    root = _ROOT.match(text, position)
    if not root:
        return JUNIT  # malformed beyond the prolog: the XML parser names the line
    name = root.group(1).decode("ascii", "replace").rsplit(":", 1)[-1]
    return _ROOTS.get(name)
