"""Issue-tracker integrations: configure them (the inbound secret, the outbound API settings).

A verified tracker call becomes the bug loop in ``inbound.py``: a resolved bug, in one transaction:
the delivery is recorded (a redelivery then changes nothing), one ``bug.resolved`` per linked case,
each linked case flagged for retest, and one ``retest.required`` per newly flagged case.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from tms.config import Config
from tms.db import Database, Row
from tms.errors import DomainError, InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.integrations import KINDS
from tms.integrations import store as integration_store
from tms.integrations.models import Integration, IntegrationCreate, IntegrationUpdate
from tms.integrations.outbound import Target
from tms.notifications.safety import literal_address_problem, url_problem
from tms.team.audit import service as audit
from tms.team.signin import secret_box

log = logging.getLogger(__name__)

KIND_LABELS = {"GITHUB": "GitHub Issues", "GITLAB": "GitLab Issues", "JIRA": "Jira"}
# owner/repo on GitHub; group/subgroup/project on GitLab
_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$")


@dataclass(frozen=True, slots=True)
class Created:
    integration: Row
    secret: str  # shown once, at creation


def inbound_url(base_url: str, integration_id: str) -> str:
    return f"{base_url.rstrip('/')}/api/integrations/{integration_id}"


async def list_integrations(db: Database, tenant_id: str) -> list[Row]:
    return await integration_store.list_integrations(db, tenant_id)


async def get_integration(db: Database, tenant_id: str, integration_id: str) -> Row:
    row = await integration_store.get_integration(db, tenant_id, integration_id)
    if row is None:
        raise NotFound(f"integration {integration_id} not found")
    return row


async def recent_deliveries(db: Database, tenant_id: str, integration_id: str) -> list[Row]:
    return await integration_store.recent_deliveries(db, tenant_id, integration_id)


def _clean_repository(kind: str, repository: str | None) -> str | None:
    value = (repository or "").strip().strip("/")
    for prefix in ("https://github.com/", "http://github.com/"):
        if value.lower().startswith(prefix):
            value = value[len(prefix):]
    if value.endswith(".git"):
        value = value[:-4]
    if kind == "JIRA":
        if value:
            raise InvalidInput("Jira keys (PROJ-12) need no repository; leave it empty", field="repository")
        return None
    if not value:
        return None
    if len(value) > 200 or not _REPOSITORY.match(value):
        example = "owner/repo" if kind == "GITHUB" else "group/project"
        raise InvalidInput(f"write the repository as {example}", field="repository")
    if kind == "GITHUB" and value.count("/") != 1:
        raise InvalidInput("a GitHub repository is owner/repo", field="repository")
    return value


async def create_integration(
    db: Database, tenant_id: str, kind: str, name: str, repository: str | None = None, *,
    config: Config | None = None, outbound: Mapping[str, str | None] | None = None,
) -> Created:
    """``outbound``: the tracker API settings (``api_url``, ``api_token``, ``api_user``,
    ``project_path``, ``project_key``); a token needs ``config`` (its key encrypts it)."""
    kind = (kind or "").strip().upper()
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")
    name = (name or "").strip()
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    if len(name) > 200:
        raise InvalidInput("name is at most 200 characters", field="name")
    clean_repository = _clean_repository(kind, repository)
    columns = _clean_outbound(kind, config, outbound or {})
    # URL-safe: the same secret goes into a Jira ?secret= URL when that Jira cannot sign
    secret = secrets.token_urlsafe(32)
    integration_id = new_id()
    async with db.transaction() as tx:
        await integration_store.insert_integration(
            tx, integration_id=integration_id, tenant_id=tenant_id, kind=kind, name=name,
            repository=clean_repository, secret=secret, created_at=now_iso(), outbound=columns,
        )
        row = await integration_store.get_integration(tx, tenant_id, integration_id)
        await audit.record(tx, tenant_id, "integration.created", "integration", integration_id,
                           {"kind": kind, "name": name, "repository": clean_repository, **_audited(columns)})
    assert row is not None
    return Created(row, secret)


async def regenerate_secret(db: Database, tenant_id: str, integration_id: str) -> str:
    secret = secrets.token_urlsafe(32)
    async with db.transaction() as tx:
        if not await integration_store.replace_secret(tx, tenant_id, integration_id, secret, now_iso()):
            raise NotFound(f"integration {integration_id} not found")
        await audit.record(tx, tenant_id, "integration.secret_regenerated", "integration", integration_id)
    return secret


async def delete_integration(db: Database, tenant_id: str, integration_id: str) -> None:
    async with db.transaction() as tx:
        if not await integration_store.delete_integration(tx, tenant_id, integration_id):
            raise NotFound(f"integration {integration_id} not found")
        await audit.record(tx, tenant_id, "integration.deleted", "integration", integration_id)


# --- outbound settings (issue 27): the tracker's API, its token encrypted at rest -----------------

TOKEN_PURPOSE = "tracker-api-token"  # noqa: S105 - the key derivation's label, not a secret
GITHUB_API = "https://api.github.com"
OUTBOUND_FIELDS = ("api_url", "api_token", "api_user", "project_path", "project_key")
# which settings each tracker takes besides the URL and the token
_KIND_FIELDS = {"GITHUB": ("repository",), "GITLAB": ("project_path",), "JIRA": ("api_user", "project_key")}
_PROJECT_KEY = re.compile(r"^[A-Z][A-Z0-9_]{0,99}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def _blank(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def _clean_api_url(config: Config | None, value: str | None) -> str | None:
    url = _blank(value)
    if url is None:
        return None
    url = url.rstrip("/")
    https_only = config.production if config is not None else False
    problem = url_problem(url, https_only=https_only)
    if problem is None and urlsplit(url).username is not None:
        problem = "url must not hold credentials: give the token in api_token"
    if problem is None and not (config is not None and config.get("webhooks.allow_private_targets")):
        refused = literal_address_problem(url)
        if refused:
            problem = f"url refused: {refused} (webhooks.allow_private_targets is false)"
    if problem:
        raise InvalidInput(problem.replace("url ", "api_url ", 1), field="api_url")
    return url


def _clean_outbound(kind: str, config: Config | None, values: Mapping[str, str | None]) -> dict[str, str | None]:
    """The columns for the outbound settings ``values`` holds (absent keys stay as they are)."""
    columns: dict[str, str | None] = {}
    for field in ("api_user", "project_path", "project_key"):
        if field in values and _blank(values[field]) is not None and field not in _KIND_FIELDS[kind]:
            raise InvalidInput(f"{field} does not apply to {KIND_LABELS[kind]}; leave it empty", field=field)
    if "api_url" in values:
        columns["api_url"] = _clean_api_url(config, values["api_url"])
    if "api_user" in values:
        user = _blank(values["api_user"])
        if user is not None and (len(user) > 254 or not _EMAIL.match(user)):
            raise InvalidInput("api_user is the Jira account's email address", field="api_user")
        columns["api_user"] = user
    if "project_path" in values:
        path = _blank(values["project_path"])
        if path is not None:
            path = path.strip("/")
            if len(path) > 200 or not (path.isdigit() or _REPOSITORY.match(path)):
                raise InvalidInput("project_path is group/project (or the project's numeric id)", field="project_path")
        columns["project_path"] = path
    if "project_key" in values:
        key = _blank(values["project_key"])
        if key is not None:
            key = key.upper()
            if not _PROJECT_KEY.match(key):
                raise InvalidInput("project_key is the Jira project's key, e.g. SHOP", field="project_key")
        columns["project_key"] = key
    if "api_token" in values:
        token = _blank(values["api_token"])
        if token is not None and any(ord(char) < 33 or ord(char) == 127 for char in token):
            raise InvalidInput("api_token must not contain spaces or control characters", field="api_token")
        if token is not None and config is None:
            raise InvalidInput("api_token needs the server's key to be stored", field="api_token")
        columns["api_token_encrypted"] = (None if token is None or config is None
                                          else secret_box.encrypt(config, TOKEN_PURPOSE, token))
    if kind == "GITHUB" and columns.get("api_token_encrypted") and not columns.get("api_url") and "api_url" in values:
        columns["api_url"] = GITHUB_API  # github.com unless an Enterprise URL is given
    return columns


def _audited(columns: Mapping[str, str | None]) -> dict[str, Any]:
    """Settings for the audit log: the token as "set"/"cleared", never its value."""
    shown: dict[str, Any] = {key: value for key, value in columns.items() if key != "api_token_encrypted"}
    if "api_token_encrypted" in columns:
        shown["api_token"] = "set" if columns["api_token_encrypted"] else "cleared"
    return shown


def outbound_ready(row: Mapping[str, Any]) -> bool:
    """Whether the integration can call its tracker: URL, token and the tracker's project."""
    if not row.get("api_url") or not row.get("api_token_set"):
        return False
    kind = row["kind"]
    if kind == "GITHUB":
        return bool(row.get("repository"))
    if kind == "GITLAB":
        return bool(row.get("project_path") or row.get("repository"))
    return bool(row.get("project_key"))


def missing_outbound(row: Mapping[str, Any]) -> str:
    needs = {"GITHUB": "repository", "GITLAB": "project_path", "JIRA": "project_key"}[row["kind"]]
    return (f"integration {row['name']!r} cannot create issues: set its api_url, api_token and {needs} "
            "(Settings → Integrations)")


def to_api(row: Mapping[str, Any], base_url: str, secret: str | None = None) -> Integration:
    return Integration(
        id=row["id"], kind=row["kind"], name=row["name"], repository=row["repository"], api_url=row["api_url"],
        api_user=row["api_user"], project_path=row["project_path"], project_key=row["project_key"],
        api_token_set=bool(row["api_token_set"]), outbound=outbound_ready(row),
        inbound_url=inbound_url(base_url, row["id"]), created_at=row["created_at"], updated_at=row["updated_at"],
        last_delivery_at=row["last_delivery_at"], secret=secret,
    )


def _set_fields(body: msgspec.Struct, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(body, name) for name in names if getattr(body, name) is not msgspec.UNSET}


async def create_from_api(db: Database, config: Config, tenant_id: str, body: IntegrationCreate) -> Integration:
    created = await create_integration(db, tenant_id, body.kind, body.name, body.repository, config=config,
                                       outbound=_set_fields(body, OUTBOUND_FIELDS))
    return to_api(created.integration, config.base_url, created.secret)


async def update_integration(
    db: Database, config: Config, tenant_id: str, integration_id: str, changes: Mapping[str, Any]
) -> Row:
    """``changes``: any of name, repository and the outbound fields; ``None`` clears one (a blank token
    from a form is left out by the caller: blank there means "keep")."""
    row = await get_integration(db, tenant_id, integration_id)
    kind = row["kind"]
    columns = _clean_outbound(kind, config, {k: v for k, v in changes.items() if k in OUTBOUND_FIELDS})
    if "name" in changes:
        name = (changes["name"] or "").strip()
        if not name:
            raise InvalidInput("name must not be blank", field="name")
        columns["name"] = name[:200]
    if "repository" in changes:
        columns["repository"] = _clean_repository(kind, changes["repository"])
    if not columns:
        return row
    async with db.transaction() as tx:
        if not await integration_store.update_settings(tx, tenant_id, integration_id, columns, now_iso()):
            raise NotFound(f"integration {integration_id} not found")
        fresh = await integration_store.get_integration(tx, tenant_id, integration_id)
        await audit.record(tx, tenant_id, "integration.updated", "integration", integration_id, _audited(columns))
    assert fresh is not None
    return fresh


async def update_from_api(
    db: Database, config: Config, tenant_id: str, integration_id: str, body: IntegrationUpdate
) -> Integration:
    row = await update_integration(db, config, tenant_id, integration_id,
                                   _set_fields(body, ("name", "repository", *OUTBOUND_FIELDS)))
    return to_api(row, config.base_url)


class TrackerFailed(DomainError):
    """The tracker refused the call or did not answer: nothing was linked; the same request may be retried."""

    status_code = 502
    title = "Bad Gateway"


def tracker_target(config: Config, row: Mapping[str, Any]) -> Target:
    try:
        token = secret_box.decrypt(config, TOKEN_PURPOSE, row["api_token_encrypted"])
    except secret_box.SecretUnreadable as exc:
        raise TrackerFailed(f"the API token of integration {row['name']!r} cannot be read with this server's "
                            "key (auth.secret_key changed?): enter it again in Settings → Integrations") from exc
    return Target(kind=row["kind"], api_url=row["api_url"], token=token, api_user=row["api_user"],
                  repository=row["repository"], project_path=row["project_path"] or row["repository"],
                  project_key=row["project_key"])


def allow_private(config: Config) -> bool:
    return config.get("webhooks.allow_private_targets")


def tracker_timeout(config: Config) -> float:
    return config.get("webhooks.timeout_seconds")
