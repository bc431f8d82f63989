"""Cucumber JSON as cucumber-js, Cucumber-JVM and behave write it: one outcome per scenario.

A Scenario Outline is written by all three as one element per example row, so each row becomes its
own outcome (rows sharing a name get " (example N)" to keep their titles apart).

Status from the scenario's steps and hooks, the worst one deciding, as Cucumber itself does:

| steps                                   | status  |
|-----------------------------------------|---------|
| any failed (step or hook)               | FAILED  |
| any error (behave: an exception in a hook) | BROKEN  |
| any undefined, pending or ambiguous     | BROKEN: the scenario could not run as written; that is a
|                                         | broken test, not a failing product                  |
| otherwise any skipped/untested          | SKIPPED |
| all passed                              | PASSED  |
| no steps                                | behave's own scenario status if written, else UNKNOWN |

Durations: cucumber-js and Cucumber-JVM write nanoseconds, behave seconds; the outcome has the sum
of its steps and hooks in milliseconds.
"""

from __future__ import annotations

import json
from typing import Any

from tms.reporter.junit import MAX_OUTPUT_CHARS, to_utc_iso
from tms.reporter.model import ReportError, TestOutcome, paused_gc

_BROKEN = {"undefined", "pending", "ambiguous"}
_SKIPPED = {"skipped", "untested"}
_ELEMENT_STATUS = {"passed": "PASSED", "failed": "FAILED", "skipped": "SKIPPED", "untested": "SKIPPED",
                   "undefined": "BROKEN", "error": "BROKEN", "hook_error": "BROKEN"}


@paused_gc
def parse_cucumber(path: str) -> list[TestOutcome]:
    """Every scenario (and example row) of a Cucumber JSON report; ReportError when it is not one."""
    try:
        with open(path, encoding="utf-8-sig") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise ReportError(path, f"malformed JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc
    except UnicodeDecodeError as exc:
        raise ReportError(path, f"not UTF-8 text: {exc.reason}") from exc
    except OSError as exc:
        raise ReportError(path, f"cannot read: {exc.strerror or exc}") from exc
    if not isinstance(data, list) or not all(isinstance(f, dict) for f in data):
        raise ReportError(path, "not a Cucumber JSON report: expected a list of features", not_a_report=True)
    if data and not any("elements" in f or "keyword" in f for f in data):
        raise ReportError(path, "not a Cucumber JSON report: its objects are not features", not_a_report=True)
    behave = any("location" in f and "uri" not in f for f in data)
    framework = "behave" if behave else "cucumber"
    outcomes: list[TestOutcome] = []
    for feature in data:
        outcomes.extend(_feature(feature, path, framework, behave))
    return outcomes


def _feature(feature: dict[str, Any], path: str, framework: str, behave: bool) -> list[TestOutcome]:
    feature_name = str(feature.get("name") or feature.get("uri") or feature.get("location") or "").strip()
    feature_tags = _tags(feature.get("tags"))
    elements = [e for e in feature.get("elements") or [] if isinstance(e, dict)]
    names = [str(e.get("name") or "").strip() for e in elements if e.get("type") != "background"]
    repeated = {n for n in names if names.count(n) > 1}
    ordinal: dict[str, int] = {}
    background: list[dict[str, Any]] = []
    outcomes = []
    for element in elements:
        if element.get("type") == "background" or element.get("keyword", "").strip() == "Background":
            # Cucumber-JVM writes the background before each scenario: its steps belong to the next one
            # (behave writes it as a template without results and repeats its steps in each scenario)
            background = [r for r in _results(element) if not r.get("missing")]
            continue
        name = str(element.get("name") or "").strip() or "(unnamed scenario)"
        if name in repeated:
            ordinal[name] = ordinal.get(name, 0) + 1
            name = f"{name} (example {ordinal[name]})"
        results = [*background, *_results(element)]
        background = []
        outcomes.append(_outcome(element, name, results, feature_name, feature_tags, path, framework, behave))
    return outcomes


def _results(element: dict[str, Any]) -> list[dict[str, Any]]:
    """Step and hook results in execution order, each {status, duration, error_message, step}."""
    found: list[dict[str, Any]] = []

    def add(items: Any, label: str | None = None) -> None:
        for item in items or []:
            if not isinstance(item, dict):
                continue
            result = item.get("result")
            step = label or f"{str(item.get('keyword') or '').strip()} {item.get('name') or ''}".strip()
            if not isinstance(result, dict):
                # behave leaves out the result of a step it never reached
                found.append({"status": "untested", "step": step, "missing": True})
                continue
            found.append({**result, "step": step})

    add(element.get("before"), "Before hook")
    for step in element.get("steps") or []:
        if isinstance(step, dict):
            add(step.get("before"), "BeforeStep hook")
            add([step])
            add(step.get("after"), "AfterStep hook")
    add(element.get("after"), "After hook")
    return found


def _outcome(element: dict[str, Any], name: str, results: list[dict[str, Any]], feature_name: str,
             feature_tags: tuple[str, ...], path: str, framework: str, behave: bool) -> TestOutcome:
    statuses = [str(r.get("status") or "").lower() for r in results]
    notes: list[str] = []
    failing = None
    if "failed" in statuses:
        status = "FAILED"
        failing = results[statuses.index("failed")]
    elif "error" in statuses or "hook_error" in statuses:
        status = "BROKEN"
        failing = next(r for r in results if str(r.get("status")).lower() in ("error", "hook_error"))
    elif any(s in _BROKEN for s in statuses):
        status = "BROKEN"
        failing = next(r for r in results if str(r.get("status")).lower() in _BROKEN)
    elif any(s in _SKIPPED for s in statuses):
        status = "SKIPPED"
    elif statuses and all(s == "passed" for s in statuses):
        status = "PASSED"
    elif not statuses:
        status = _ELEMENT_STATUS.get(str(element.get("status") or "").lower(), "UNKNOWN")
    else:
        status = "UNKNOWN"  # a step status this client does not know

    outcome = TestOutcome(
        name=name,
        suite_path=(feature_name,) if feature_name else (),
        status=status,
        duration_ms=_duration_ms(results, behave),
        framework=framework,
        executed_at=to_utc_iso(element.get("start_timestamp")),
        tags=tuple(dict.fromkeys([*feature_tags, *_tags(element.get("tags"))])),
        notes=notes,
        source=path,
    )
    if failing is not None:
        kind = str(failing.get("status")).lower()
        text = _error_text(failing.get("error_message"))
        notes.append(f"{kind} at: {failing.get('step') or 'a hook'}")
        outcome.error_message = _first_line(text) or f"{kind} step: {failing.get('step')}"
        outcome.error_stack = _cap(text) or None
    return outcome


def _duration_ms(results: list[dict[str, Any]], behave: bool) -> int | None:
    total = 0.0
    seen = False
    for result in results:
        value = result.get("duration")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            total += value
            seen = True
    if not seen:
        return None
    return round(total * 1000) if behave else round(total / 1_000_000)


def _tags(raw: Any) -> tuple[str, ...]:
    """Tags as "@name": cucumber-js/JVM write [{"name": "@x"}], behave writes ["x"]."""
    tags = []
    for tag in raw or []:
        name = tag.get("name") if isinstance(tag, dict) else tag
        if isinstance(name, str) and name.strip():
            name = name.strip()
            tags.append(name if name.startswith("@") else f"@{name}")
    return tuple(tags)


def _error_text(value: Any) -> str:
    if isinstance(value, list):  # behave writes the traceback as a list of lines
        return "\n".join(str(line).rstrip("\n") for line in value).strip()
    return str(value).strip() if value else ""


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:1000]
    return ""


def _cap(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[: MAX_OUTPUT_CHARS - 40] + f"\n… [{len(text) - MAX_OUTPUT_CHARS + 40} characters cut]"
