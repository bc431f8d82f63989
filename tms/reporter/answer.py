"""What `tms ingest` reports back: the summary of what it read, the service's answer (accepted,
rejected, the attachments uploaded, the gate), a refusal explained with a hint, and a dry run."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any
from urllib.parse import quote

from tms.reporter import attachments as report_files
from tms.reporter.console import EXIT_FAILED, EXIT_OK, EXIT_REJECTED, Console
from tms.reporter.gate import EXIT_GATE, GateError, classify_failures, describe, failed, fetch_clusters
from tms.reporter.mapping import Item
from tms.reporter.model import STATUSES, TestOutcome
from tms.reporter.upload import Reply


def summary_of(args: argparse.Namespace, *, files: list[str], outcomes: list[TestOutcome],
             items: list[Item]) -> dict[str, Any]:
    statuses = Counter(item.result["status"] for item in items)
    linked = sum(1 for item in items if item.code)
    flaky = sum(1 for o in outcomes if o.status == "PASSED" and any(a in ("FAILED", "BROKEN") for a in o.attempts))
    return {
        "project_id": args.project.strip(),
        "run_id": None,
        "url": None,
        "files": files,
        "tests": len(outcomes),
        "results": len(items),
        "accepted": None,
        "rejected": None,
        "statuses": {status: statuses.get(status, 0) for status in STATUSES},
        "linked": linked,
        "unlinked": len(items) - linked,
        "flaky": flaky,
        "errors": [],
        "attachments": {"found": sum(len(files) for files in _files_of(items)), "uploaded": 0, "skipped": []},
    }


def report_answer(args: argparse.Namespace, url: str, token: str, reply: Reply, items: list[Item],
            summary: dict[str, Any], console: Console) -> int:
    body: dict[str, Any] = reply.body if isinstance(reply.body, dict) else {}
    if reply.status_code not in (200, 201, 207):
        return _refused(reply, console, args)
    data: dict[str, Any] = body["data"] if isinstance(body.get("data"), dict) else {}
    run_id = body.get("run_id") or data.get("run_id") or data.get("id")
    errors = body.get("errors") or data.get("errors") or []
    summary["run_id"] = run_id
    summary["url"] = f"{url}/runs/{run_id}" if run_id else None
    summary["attempts"] = reply.attempts
    rejected = []
    for error in errors if isinstance(errors, list) else []:
        index = error.get("index") if isinstance(error, dict) else None
        reason = str(error.get("error") or error.get("message") or error) if isinstance(error, dict) else str(error)
        item = items[index] if isinstance(index, int) and 0 <= index < len(items) else None
        rejected.append({
            "index": index,
            "title": item.title if item else None,
            "test_case_code": item.code if item else None,
            "error": reason,
        })
    summary["errors"] = rejected
    summary["rejected"] = _int(body.get("rejected", data.get("rejected")), len(rejected))
    summary["accepted"] = _int(body.get("accepted", data.get("accepted")), len(items) - summary["rejected"])
    _upload_attachments(args, url, token, body.get("result_ids"), items, summary, console)

    gate: str = getattr(args, "gate", None) or ""
    if gate and run_id:
        try:
            summary["gate"] = {"gate": gate, **classify_failures(fetch_clusters(url, args.token_value, run_id,
                                                                             args.timeout))}
        except GateError as exc:
            console.err(f"tms ingest: error: {exc}")
            return EXIT_FAILED
    if args.json:
        console.out(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        _print_summary(summary, console)
        if "gate" in summary:
            for line in describe(gate, summary["gate"]):
                console.out(line)
    if "gate" in summary and failed(gate, summary["gate"]):
        console.err(f"tms ingest: error: the {gate} gate failed")
        return EXIT_GATE
    if summary["rejected"]:
        if args.strict:
            console.err(f"tms ingest: error: {summary['rejected']} result(s) rejected (--strict)")
            return EXIT_REJECTED
        console.err(f"tms ingest: warning: {summary['rejected']} result(s) rejected; the run holds the rest "
                    "(--strict makes this fail the job)")
    return EXIT_OK


def _upload_attachments(args: argparse.Namespace, url: str, token: str, result_ids: Any, items: list[Item],
                        summary: dict[str, Any], console: Console) -> None:
    """The files the reports reference, each to its result; a file that cannot go is named, with why."""
    pairs: list[tuple[str | None, list[tuple[str, str]]]] = [(None, files) for files in _files_of(items)]
    if not any(files for _, files in pairs):
        return
    if isinstance(result_ids, list) and len(result_ids) == len(items):
        pairs = [(rid if isinstance(rid, str) else None, files)
                 for rid, (_, files) in zip(result_ids, pairs, strict=True)]
        planned, skipped = report_files.plan(pairs)
    else:
        planned = []
        skipped = [{"file": path, "name": name, "reason": "the service's answer names no result ids (an older service)"}
                   for _, files in pairs for name, path in files]
    if planned:
        console.progress(f"uploading {len(planned)} attachment(s)...")
    uploaded, refused = report_files.upload(url, token, planned, timeout=args.timeout, log=console.debug) \
        if planned else (0, [])
    summary["attachments"] = {"found": summary["attachments"]["found"], "uploaded": uploaded,
                              "skipped": skipped + refused}


def _files_of(items: list[Item]) -> list[list[tuple[str, str]]]:
    return [[f for test in item.tests for f in test.attachments] for item in items]


def _refused(reply: Reply, console: Console, args: argparse.Namespace) -> int:
    body = reply.body
    if isinstance(body, dict):
        detail = ": ".join(str(body[k]) for k in ("title", "detail") if body.get(k))
        fields = [f"{e.get('field')}: {e.get('message')}" for e in body.get("errors") or [] if isinstance(e, dict)]
    else:
        detail, fields = str(body).strip()[:500], []
    hint = {
        401: "the token is missing, malformed, revoked or unknown: check TMS_TOKEN",
        403: "the token lacks the write scope",
        404: f"no project {args.project!r} in this token's tenant"
             + (f", or no run {args.run_id!r} in that project" if args.run_id else ""),
        409: "the run is completed: shards must be ingested before `tms run complete`" if args.run_id else None,
        413: "the request is too large for the service: split the reports into several runs",
    }.get(reply.status_code)
    if 300 <= reply.status_code < 400:
        # a POST with a token is not followed anywhere: the URL itself must be the service's
        hint = f"the service redirects (Location: {reply.location or '?'}): set TMS_URL to the final address"
    if args.json:
        console.out(json.dumps({"error": {"status": reply.status_code, "detail": detail, "errors": fields,
                                          "hint": hint}}, ensure_ascii=False, indent=2))
    console.err(f"tms ingest: error: the service refused the ingest: HTTP {reply.status_code} {detail}".rstrip())
    for line in fields:
        console.err(f"  {line}")
    if hint:
        console.err(f"  hint: {hint}")
    return EXIT_FAILED


def _print_summary(summary: dict[str, Any], console: Console) -> None:
    statuses = ", ".join(f"{s} {n}" for s, n in summary["statuses"].items() if n)
    console.out(f"run {summary['run_id']}: {summary['url']}")
    console.out(f"  {summary['tests']} tests in {len(summary['files'])} report(s) -> {summary['results']} results: "
                f"{summary['accepted']} accepted, {summary['rejected']} rejected")
    console.out(f"  status: {statuses}")
    console.out(f"  linked to cases: {summary['linked']}, unlinked: {summary['unlinked']}"
                + (f", flaky (passed on retry): {summary['flaky']}" if summary["flaky"] else ""))
    files = summary.get("attachments") or {}
    if files.get("found"):
        console.out(f"  attachments: {files['uploaded']} uploaded, {len(files['skipped'])} skipped")
        for skipped in files["skipped"]:
            console.out(f"    skipped {skipped['file']}: {skipped['reason']}")
    if summary.get("unreadable"):
        console.out(f"  unreadable reports: {len(summary['unreadable'])} (each named above; "
                    "their tests are not in the run)")
    if summary["errors"]:
        console.out("  rejected:")
        for error in summary["errors"]:
            code = f" [{error['test_case_code']}]" if error["test_case_code"] else ""
            console.out(f"    #{error['index']} {error['title']}{code}: {error['error']}")


def report_dry_run(args: argparse.Namespace, url: str, token: str, payload: dict[str, Any], items: list[Item],
             summary: dict[str, Any], console: Console) -> int:
    unknown: list[str] | None = None
    if url and token:
        codes = list(dict.fromkeys(item.code for item in items if item.code))
        try:
            unknown = _unknown_codes(url, token, codes, args.timeout, console)
        except _CheckFailed as exc:
            console.err(f"tms ingest: warning: could not check the case codes: {exc}")
    if args.json:
        console.out(json.dumps({**summary, "dry_run": True, "unknown_codes": unknown, "payload": payload},
                               ensure_ascii=False, indent=2))
        return EXIT_OK
    for item in items:
        console.out(f"{item.result['status']:<8} {item.code or '-':<14} {item.title}")
    statuses = ", ".join(f"{s} {n}" for s, n in summary["statuses"].items() if n)
    console.out(f"dry run: {summary['tests']} tests in {len(summary['files'])} report(s) -> "
                f"{summary['results']} results for project {summary['project_id']} ({statuses}); "
                f"linked {summary['linked']}, unlinked {summary['unlinked']}; nothing was sent")
    if unknown is not None:
        if unknown:
            console.out(f"unknown case codes (would be rejected): {', '.join(unknown)}")
        else:
            console.out("every case code is known to the service")
    return EXIT_OK


class _CheckFailed(Exception):
    pass


def _unknown_codes(url: str, token: str, codes: list[str], timeout: float, console: Console) -> list[str]:
    """GET /api/v1/cases/{code} per code: the same tenant-wide lookup the ingest makes, read only."""
    import httpx

    unknown = []
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=timeout) as client:
            for code in codes:
                response = client.get(f"/api/v1/cases/{quote(code, safe='')}")
                console.debug(f"GET /api/v1/cases/{code} -> {response.status_code}")
                if response.status_code == 404:
                    unknown.append(code)
                elif response.status_code != 200:
                    raise _CheckFailed(f"HTTP {response.status_code} on GET /api/v1/cases/{code}")
    except httpx.HTTPError as exc:
        raise _CheckFailed(type(exc).__name__) from exc
    return unknown


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def size_text(count: int) -> str:
    return f"{count / 1_000_000:.1f} MB" if count >= 1_000_000 else f"{count / 1000:.0f} kB"
