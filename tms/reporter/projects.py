"""`--project` takes a project id or its name; a name is looked up through `GET /api/v1/projects`.

An id (a 25-character cuid, as the Projects page shows it) is sent as is, without a request, so a
token with the write scope alone keeps working. A name needs the read scope too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

from tms.reporter.upload import USER_AGENT

PROJECT_ID = re.compile(r"c[0-9a-z]{24}")


class ProjectNotResolved(Exception):
    """The name matches no project, or several; or the service could not be asked."""

    def __init__(self, message: str, *, network: bool = False) -> None:
        super().__init__(message)
        self.network = network


@dataclass(frozen=True, slots=True)
class Resolved:
    project_id: str
    looked_up: bool  # True when the reference was a name


def resolve_project(url: str, token: str, reference: str, timeout: float) -> Resolved:
    reference = reference.strip()
    if PROJECT_ID.fullmatch(reference):
        return Resolved(reference, looked_up=False)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", "User-Agent": USER_AGENT}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=timeout) as client:
            response = client.get("/api/v1/projects")
    except httpx.HTTPError as exc:
        raise ProjectNotResolved(f"could not look the project up at {url}: {type(exc).__name__}",
                                 network=True) from exc
    if response.status_code == 403:
        raise ProjectNotResolved(f"--project {reference!r} is not a project id, and looking a project up by "
                                 "name needs a token with the read scope: pass the id (Projects page)")
    if response.status_code != 200:
        raise ProjectNotResolved(f"looking up --project {reference!r}: HTTP {response.status_code} on "
                                 "GET /api/v1/projects")
    projects = [p for p in response.json().get("data", []) if isinstance(p, dict)]
    exact = [p for p in projects if str(p.get("name", "")) == reference]
    folded = [p for p in projects if str(p.get("name", "")).casefold() == reference.casefold()]
    for found in (exact, folded):
        if len(found) == 1:
            return Resolved(str(found[0]["id"]), looked_up=True)
        if len(found) > 1:
            ids = ", ".join(str(p["id"]) for p in found)
            raise ProjectNotResolved(f"several projects are named {reference!r} ({ids}): pass the id")
    names = ", ".join(sorted(repr(p.get("name")) for p in projects)[:20]) or "none"
    raise ProjectNotResolved(f"no project has the id or name {reference!r} in this token's tenant "
                             f"(projects: {names})")
