"""/api/v1/integrations and /api/v1/results/{id}/defect bodies (issue 27: the tracker, both ways)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import LongText, Name, RequestBody

Kind = Literal["GITHUB", "GITLAB", "JIRA"]
Setting = Annotated[str, msgspec.Meta(max_length=500)]
# a tracker token is a few dozen characters (GitHub 40 to 93, GitLab 26, Jira 24 to 200); refuse a novel
Token = Annotated[str, msgspec.Meta(max_length=2_000)]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=250)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]


class IntegrationCreate(RequestBody):
    kind: Kind
    name: Name
    repository: Setting | None = None      # GitHub owner/name (and GitLab group/project for '#12' keys)
    api_url: Setting | None = None
    api_token: Token | None = None         # write-only: never returned
    api_user: Setting | None = None        # Jira: the account's email
    project_path: Setting | None = None    # GitLab: group/project or its numeric id
    project_key: Setting | None = None     # Jira: the project key


class IntegrationUpdate(RequestBody):
    """PATCH: the fields given change; ``null`` clears one (``api_token: null`` forgets the token)."""

    name: Name | UnsetType = UNSET
    repository: Setting | UnsetType | None = UNSET
    api_url: Setting | UnsetType | None = UNSET
    api_token: Token | UnsetType | None = UNSET
    api_user: Setting | UnsetType | None = UNSET
    project_path: Setting | UnsetType | None = UNSET
    project_key: Setting | UnsetType | None = UNSET


class Integration(msgspec.Struct, omit_defaults=True):
    id: str
    kind: str
    name: str
    repository: str | None
    api_url: str | None
    api_user: str | None
    project_path: str | None
    project_key: str | None
    api_token_set: bool        # whether a token is stored; the token itself is never returned
    outbound: bool             # settings complete: defects can be created and requirements read
    inbound_url: str           # the webhook URL to give the tracker
    created_at: str
    updated_at: str
    last_delivery_at: str | None
    secret: str | None = None  # the webhook secret: in the answer to POST only, never again


class IntegrationEnvelope(msgspec.Struct):
    data: Integration


class IntegrationList(msgspec.Struct):
    data: list[Integration]


class DefectCreate(RequestBody):
    integration_id: Id
    title: Title | None = None   # default: "<code>: <title> fails"
    body: LongText | None = None  # default: the failure, the case, the environment and the links


class Defect(msgspec.Struct):
    result_id: str
    integration_id: str
    bug_ticket_key: str
    bug_ticket_url: str | None
    title: str


class DefectEnvelope(msgspec.Struct):
    data: Defect


class DefectDraft(msgspec.Struct):
    """What "Create issue" proposes: the title and body the tracker would get."""

    title: str
    body: str
