"""Issue 22 item 13 and issue 24: the reporter never reads outside a report's folder, refuses deep XML
nesting with a clear message, and never drops or merges a test silently."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tms.reporter import attachments as report_files
from tms.reporter.allure import parse_allure
from tms.reporter.cli import PARSERS, Console, _parse_all
from tms.reporter.detect import detect
from tms.reporter.files import expand
from tms.reporter.mapping import to_items
from tms.reporter.model import MAX_XML_DEPTH, RefusedPath, ReportError, TestOutcome

FIXTURES = Path(__file__).parent / "fixtures"


def parse_paths(*paths: Path | str) -> tuple[list[TestOutcome], list[ReportError]]:
    """What `tms ingest PATH...` reads: files found, detected, parsed, repeated tests handled."""
    arguments = [str(p) for p in paths]
    files, _ = expand(arguments)
    outcomes, _, errors = _parse_all(arguments, files, Console(None, False, io.StringIO(), io.StringIO()))
    return outcomes, errors


def titles(outcomes: list[TestOutcome]) -> list[str]:
    return [item.title for item in to_items(outcomes)]


def allure_result(folder: Path, name: str, **fields: Any) -> Path:
    body = {"uuid": name, "historyId": name, "name": name, "status": "passed", "start": 1, "stop": 2, **fields}
    path = folder / f"{name}-result.json"
    path.write_text(json.dumps(body))
    return path


# --- issue 22 item 13: files outside the results folder ------------------------------------------------

def test_allure_attachment_outside_the_results_folder_is_refused_never_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token=hunter2")
    (tmp_path / "other.json").write_text("{}")
    results = tmp_path / "ci" / "allure-results"
    results.mkdir(parents=True)
    (results / "shot.png").write_bytes(b"\x89PNG")
    (results / "link.txt").symlink_to(secret)
    attachments = [{"name": "up", "source": "../../secret.txt", "type": "text/plain"},
                   {"name": "absolute", "source": str(tmp_path / "other.json")},
                   {"name": "symlink", "source": "link.txt"},
                   {"name": "ok", "source": "shot.png"}]
    allure_result(results, "a", attachments=attachments)
    outcomes, errors = parse_allure([str(results / "a-result.json")])
    assert errors == []
    files = outcomes[0].attachments
    assert [name for name, _ in files] == ["up", "absolute", "symlink", "ok"]
    assert [isinstance(path, RefusedPath) for _, path in files] == [True, True, True, False]
    assert files[3][1] == os.path.realpath(results / "shot.png")
    planned, skipped = report_files.plan([("r1", files)])
    assert [p.name for p in planned] == ["ok"]
    assert [s["name"] for s in skipped] == ["up", "absolute", "symlink"]
    assert all("outside the results folder" in s["reason"] for s in skipped)


# --- issue 22 item 13: nesting --------------------------------------------------------------------------

DEEP = 200_000


def deep_files(folder: Path) -> dict[str, Path]:
    n = DEEP
    made = {
        "junit": '<testsuites>' + '<testsuite name="s">' * n + '<testcase name="t"/>' + '</testsuite>' * n
                 + '</testsuites>',
        "nunit": '<test-run>' + '<test-suite name="s" type="TestSuite">' * n + '<test-case name="t" result="Passed"/>'
                 + '</test-suite>' * n + '</test-run>',
        "nunit-in-test": '<test-run><test-suite name="s"><test-case name="t" result="Failed">' + '<x>' * n
                         + '</x>' * n + '</test-case></test-suite></test-run>',
        "robot": '<robot><suite name="s"><test name="t">' + '<kw name="k">' * n + '</kw>' * n
                 + '<status status="PASS"/></test></suite></robot>',
        "trx": '<TestRun><Results>' + '<x>' * n + '</x>' * n + '</Results></TestRun>',
        "xunit": '<assemblies><assembly name="a">' + '<collection name="c">' * n + '</collection>' * n
                 + '</assembly></assemblies>',
        "testng": '<testng-results><suite name="s">' + '<test name="t">' * n + '</test>' * n
                  + '</suite></testng-results>',
        # a deep nesting that fits in one 64 kB chunk, inside and outside a test
        "small-suites": '<test-run>' + '<test-suite name="s">' * 3000 + '<test-case name="t" result="Passed"/>'
                        + '</test-suite>' * 3000 + '</test-run>',
        "small-in-test": '<test-run><test-suite name="s"><test-case name="t" result="Failed">' + '<x>' * 3000
                         + '</x>' * 3000 + '</test-case></test-suite></test-run>',
    }
    paths = {}
    for name, text in made.items():
        paths[name] = folder / f"{name}.xml"
        paths[name].write_text(text)
    return paths


def test_every_xml_format_refuses_nesting_past_the_limit_quickly_naming_file_and_limit(tmp_path: Path) -> None:
    for name, path in deep_files(tmp_path).items():
        kind = detect(str(path))
        assert kind is not None, name
        started = time.perf_counter()
        with pytest.raises(ReportError) as caught:
            PARSERS[kind](str(path))
        assert time.perf_counter() - started < 3, name
        assert caught.value.path == str(path), name
        assert f"nested deeper than {MAX_XML_DEPTH} levels" in str(caught.value), (name, str(caught.value))


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    depth = MAX_XML_DEPTH - 3  # the root, the innermost suite's case and its failure stay within it
    path = tmp_path / "deep.xml"
    path.write_text('<testsuites>' + '<testsuite name="s">' * depth + '<testcase name="t"><failure/></testcase>'
                    + '</testsuite>' * depth + '</testsuites>')
    outcomes = PARSERS["junit"](str(path))
    assert [o.status for o in outcomes] == ["FAILED"]
    path = tmp_path / "nunit.xml"
    path.write_text('<test-run>' + '<test-suite name="s" type="TestSuite">' * depth
                    + '<test-case name="t" result="Passed"/>' + '</test-suite>' * depth + '</test-run>')
    assert [o.status for o in PARSERS["nunit"](str(path))] == ["PASSED"]
