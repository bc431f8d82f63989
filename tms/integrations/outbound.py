"""Calls to a tracker's own API: create an issue, read one (GitHub, GitLab, Jira).

Like the inbound adapters, this module knows the trackers and nothing of the database: it takes the
integration's settings (``Target``, the token already decrypted) and answers ``Issue`` or raises
``TrackerError`` with a message a person can act on ("the tracker refused the token (401)"). The
token goes in a header and nowhere else: never in a message, an exception or a log line.

Connections go through ``tms.notifications.safety``'s guarded client (no redirects, no proxies from
the environment, loopback, private and link-local addresses refused unless
``webhooks.allow_private_targets``), with the webhooks' timeout.
"""

from __future__ import annotations

import base64
import functools
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from tms.notifications.safety import TargetRefused, make_client, make_ssl_context

# GitHub: the REST API version these calls are written against
GITHUB_API_VERSION = "2022-11-28"
JIRA_ISSUE_TYPE = "Bug"
_MAX_ERROR_DETAIL = 300


@dataclass(frozen=True, slots=True)
class Target:
    """Where and as whom to call: an integration's outbound settings."""

    kind: str  # GITHUB | GITLAB | JIRA
    api_url: str
    token: str
    api_user: str | None = None
    repository: str | None = None    # GitHub owner/name
    project_path: str | None = None  # GitLab group/project or id
    project_key: str | None = None   # Jira project key


@dataclass(frozen=True, slots=True)
class Issue:
    key: str          # 'SHOP-12', 'owner/repo#12', 'group/project#12'
    url: str | None   # the issue's page for people
    title: str | None
    status: str | None  # GitHub/GitLab: open|closed (opened on GitLab is shown as open); Jira: the status name


class TrackerError(Exception):
    """The tracker could not be reached or refused the call; ``str()`` is the message for the page."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _detail(response: httpx.Response) -> str:
    """What the tracker said, briefly (its JSON error message when it sends one)."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:_MAX_ERROR_DETAIL].strip()
    if isinstance(payload, dict):
        for key in ("message", "error", "errorMessages", "errors"):
            value = payload.get(key)
            if value:
                return str(value)[:_MAX_ERROR_DETAIL]
    return str(payload)[:_MAX_ERROR_DETAIL]


def _refusal(response: httpx.Response, what: str) -> TrackerError:
    code = response.status_code
    said = _detail(response)
    tail = f": {said}" if said else ""
    if code in (401, 403):
        message = f"the tracker refused the credentials ({code}); check the API token{tail}"
    elif code == 404:
        message = f"the tracker does not know {what} (404); check the repository, project or key{tail}"
    elif code in (400, 409, 410, 422):
        message = f"the tracker rejected the issue ({code}){tail}"
    elif code == 429:
        message = "the tracker is rate limiting us (429); try again later"
    else:
        message = f"the tracker answered {code}; try again later{tail}"
    return TrackerError(message, code)


def _headers(target: Target) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "TMS-tracker/1"}
    if target.kind == "GITHUB":
        headers.update({"Authorization": f"Bearer {target.token}", "Accept": "application/vnd.github+json",
                        "X-GitHub-Api-Version": GITHUB_API_VERSION})
    elif target.kind == "GITLAB":
        headers["PRIVATE-TOKEN"] = target.token
    elif target.api_user:  # Jira Cloud: email + API token
        pair = base64.b64encode(f"{target.api_user}:{target.token}".encode()).decode()
        headers["Authorization"] = f"Basic {pair}"
    else:  # Jira Data Center: a personal access token
        headers["Authorization"] = f"Bearer {target.token}"
    return headers


def _base(target: Target) -> str:
    return target.api_url.rstrip("/")


def _gitlab_project(target: Target) -> str:
    return quote(target.project_path or "", safe="")


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    return make_ssl_context()  # loading the CA bundle takes tens of milliseconds: once per process


def client(*, allow_private: bool) -> httpx.AsyncClient:
    """The client tracker calls go through (``async with``): guarded, no redirects, no proxies."""
    return make_client(allow_private=allow_private, max_connections=8, ssl_context=_ssl_context())


async def _call(
    http: httpx.AsyncClient, target: Target, method: str, url: str, *, what: str, seconds: float,
    json: dict[str, Any] | None = None,
) -> dict[str, Any]:
    try:
        response = await http.request(method, url, json=json, headers=_headers(target),
                                      timeout=httpx.Timeout(seconds))
    except TargetRefused as exc:
        raise TrackerError(str(exc)) from None
    except httpx.TimeoutException:
        raise TrackerError(f"the tracker did not answer within {seconds:g} s; try again later") from None
    except httpx.HTTPError as exc:
        # the exception's text names the host at most, never the headers (the token)
        raise TrackerError(f"the tracker could not be reached: {type(exc).__name__}") from None
    if response.status_code in (301, 302, 303, 307, 308):
        raise TrackerError(f"the tracker answered a redirect ({response.status_code}); check the API URL",
                           response.status_code)
    if response.status_code >= 400:
        raise _refusal(response, what)
    try:
        payload = response.json()
    except ValueError:
        raise TrackerError("the tracker's answer is not JSON; check the API URL") from None
    if not isinstance(payload, dict):
        raise TrackerError("the tracker's answer is not a JSON object; check the API URL")
    return payload


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


async def create_issue(http: httpx.AsyncClient, target: Target, title: str, body: str, *, seconds: float) -> Issue:
    """Creates the issue; raises ``TrackerError`` when the tracker refuses it or cannot be reached."""
    if target.kind == "GITHUB":
        payload = await _call(http, target, "POST", f"{_base(target)}/repos/{target.repository}/issues",
                              what=f"the repository {target.repository}", json={"title": title, "body": body},
                              seconds=seconds)
        number = payload.get("number")
        if not isinstance(number, int):
            raise TrackerError("GitHub's answer has no issue number")
        return Issue(f"{target.repository}#{number}", _text(payload.get("html_url")), _text(payload.get("title")),
                     _text(payload.get("state")))
    if target.kind == "GITLAB":
        payload = await _call(http, target, "POST", f"{_base(target)}/api/v4/projects/{_gitlab_project(target)}/issues",
                              what=f"the project {target.project_path}",
                              json={"title": title, "description": body},
                              seconds=seconds)
        return _gitlab_issue(target, payload)
    fields = {"project": {"key": target.project_key}, "summary": title, "description": body,
              "issuetype": {"name": JIRA_ISSUE_TYPE}}
    payload = await _call(http, target, "POST", f"{_base(target)}/rest/api/2/issue",
                          what=f"the project {target.project_key}", json={"fields": fields}, seconds=seconds)
    key = _text(payload.get("key"))
    if key is None:
        raise TrackerError("Jira's answer has no issue key")
    return Issue(key, f"{_base(target)}/browse/{key}", title, None)


def _gitlab_issue(target: Target, payload: dict[str, Any]) -> Issue:
    iid = payload.get("iid")
    if not isinstance(iid, int):
        raise TrackerError("GitLab's answer has no issue iid")
    references = payload.get("references")
    full = references.get("full") if isinstance(references, dict) else None
    key = full if isinstance(full, str) and "#" in full else f"{target.project_path}#{iid}"
    state = _text(payload.get("state"))
    return Issue(key, _text(payload.get("web_url")), _text(payload.get("title")),
                 "open" if state == "opened" else state)


def issue_number(key: str) -> str | None:
    """'owner/repo#12' or '#12' -> '12'."""
    _, sep, number = key.rpartition("#")
    return number if sep and number.isdigit() else None


async def read_issue(http: httpx.AsyncClient, target: Target, key: str, *, seconds: float) -> Issue:
    """The issue a case names (``key`` as written in its tickets); a short '#12' is an issue of the
    integration's repository or project."""
    if target.kind == "JIRA":
        url = f"{_base(target)}/rest/api/2/issue/{quote(key, safe='')}?fields=summary,status"
        payload = await _call(http, target, "GET", url, what=f"the issue {key}", seconds=seconds)
        fields = payload.get("fields")
        fields = fields if isinstance(fields, dict) else {}
        status = fields.get("status")
        status = status if isinstance(status, dict) else {}
        real_key = _text(payload.get("key")) or key
        return Issue(real_key, f"{_base(target)}/browse/{real_key}", _text(fields.get("summary")),
                     _text(status.get("name")))
    number = issue_number(key)
    where = key.rpartition("#")[0]
    if number is None:
        raise TrackerError(f"{key} is not an issue key of the form owner/repo#12")
    if target.kind == "GITHUB":
        repository = where or target.repository
        if not repository:
            raise TrackerError(f"{key} names no repository and the integration has none")
        payload = await _call(http, target, "GET", f"{_base(target)}/repos/{repository}/issues/{number}",
                              what=f"the issue {key}", seconds=seconds)
        return Issue(f"{repository}#{number}", _text(payload.get("html_url")), _text(payload.get("title")),
                     _text(payload.get("state")))
    project = where or target.project_path
    if not project:
        raise TrackerError(f"{key} names no project and the integration has none")
    url = f"{_base(target)}/api/v4/projects/{quote(project, safe='')}/issues/{number}"
    payload = await _call(http, target, "GET", url, what=f"the issue {key}", seconds=seconds)
    return _gitlab_issue(Target(target.kind, target.api_url, target.token, project_path=project), payload)
