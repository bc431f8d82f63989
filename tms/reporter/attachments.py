"""Files a report references (screenshots, videos, traces, logs), uploaded to their results after the
ingest through POST /api/v1/results/{id}/attachments.

Where a file is: a report written in one CI step is often ingested in another (artifacts downloaded
to a new folder), so a path that does not exist as written is looked up under the report's own
folder by its last components (`/builds/x/test-results/a/shot.png` -> `<report dir>/test-results/a/
shot.png`, then `<report dir>/a/shot.png`, ..., then the same under the working directory).

What is sent: only the types the service keeps (its list is repeated here; the service judges the
content again) and files up to the size the service answers with a 413 for. Anything else is named
in the summary with the reason, and never fails the command: the results are already stored.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from tms.reporter.model import RefusedPath
from tms.reporter.reading import resolve_path

# the service's allowed attachment types, by file extension (tms/attachments/filetypes.py)
ALLOWED_EXTENSIONS = ("png", "jpg", "jpeg", "gif", "webp", "svg", "pdf", "txt", "log", "json", "zip", "mp4", "webm")
MAX_PER_RESULT = 20  # the service's files per request; more files on one result are skipped
IN_FLIGHT = 4  # uploads at once: enough to hide the latency of each, few enough to spare the service
USER_AGENT = "tms-reporter/0.1"


@dataclass(slots=True)
class Planned:
    result_id: str
    name: str
    path: str


def plan(pairs: list[tuple[str | None, list[tuple[str, str]]]]) -> tuple[list[Planned], list[dict[str, str]]]:
    """(result id or None, files) per result -> files to upload and files skipped with the reason."""
    planned: list[Planned] = []
    skipped: list[dict[str, str]] = []
    for result_id, files in pairs:
        seen: set[str] = set()
        count = 0
        for name, path in files:
            if path in seen:
                continue
            seen.add(path)
            reason = _problem(path)
            if reason is None and result_id is None:
                reason = "its result was rejected by the service"
            if reason is None and count >= MAX_PER_RESULT:
                reason = f"more than {MAX_PER_RESULT} files on one result"
            if reason is not None:
                skipped.append({"file": path, "name": name, "reason": reason})
                continue
            count += 1
            planned.append(Planned(result_id, name, path))  # type: ignore[arg-type]
    return planned, skipped


def _problem(path: str) -> str | None:
    if isinstance(path, RefusedPath):
        return path.reason  # never opened, not even to see whether it exists
    extension = os.path.splitext(path)[1].lower().lstrip(".")
    if not os.path.isfile(path):
        return "file not found"
    if extension not in ALLOWED_EXTENSIONS:
        return f"type not accepted by the service (.{extension or '?'}; accepted: " \
               + ", ".join(f".{e}" for e in ALLOWED_EXTENSIONS) + ")"
    if not os.access(path, os.R_OK):
        return "file not readable"
    return None


def upload(base_url: str, token: str, planned: list[Planned], *, timeout: float,
           log: Callable[[str], None] = lambda _: None) -> tuple[int, list[dict[str, str]]]:
    """One multipart POST per file (a failure then costs one file, not twenty), ``IN_FLIGHT`` at a
    time: a file's upload is mostly waiting (for the network, the service's disk or object store), so
    200 screenshots take a quarter of the time they took one by one. Returns the number uploaded and
    the files skipped (in the order of ``planned``), each with the service's reason."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": USER_AGENT}
    limits = httpx.Timeout(timeout, connect=min(timeout, 15.0))
    with httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=limits, follow_redirects=False,
                      trust_env=True, limits=httpx.Limits(max_connections=IN_FLIGHT)) as client:

        def send(item: Planned) -> dict[str, str] | None:
            url = f"/api/v1/results/{item.result_id}/attachments"
            file_name = _file_name(item)
            content_type = mimetypes.guess_type(item.path)[0] or "application/octet-stream"
            try:
                with open(item.path, "rb") as handle:
                    response = client.post(url, files={"file": (file_name, handle, content_type)})
            except OSError as exc:
                return {"file": item.path, "name": item.name, "reason": f"cannot read: {exc.strerror or exc}"}
            except httpx.HTTPError as exc:
                return {"file": item.path, "name": item.name, "reason": f"upload failed: {type(exc).__name__}"}
            log(f"POST {url} {file_name} -> {response.status_code}")
            if response.status_code == 201:
                return None
            reason = f"refused by the service: HTTP {response.status_code} {_detail(response)}".rstrip()
            return {"file": item.path, "name": item.name, "reason": reason}

        with ThreadPoolExecutor(max_workers=IN_FLIGHT) as pool:
            outcomes = list(pool.map(send, planned))
    skipped = [outcome for outcome in outcomes if outcome is not None]
    return len(outcomes) - len(skipped), skipped


def _file_name(item: Planned) -> str:
    """The report's name for the file when it has one ("screenshot"), with the file's extension."""
    extension = os.path.splitext(item.path)[1]
    name = (item.name or "").strip().replace("/", "_").replace("\\", "_")
    if not name:
        return os.path.basename(item.path)
    return name if name.lower().endswith(extension.lower()) else name + extension


def _detail(response: httpx.Response) -> str:
    try:
        body: Any = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(body, dict):
        return str(body.get("detail") or body.get("title") or "")[:300]
    return ""


__all__ = ["plan", "resolve_path", "upload"]
