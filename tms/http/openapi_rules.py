"""What the API does beyond its types, as tables ``tms.http.openapi`` finishes the served document with:
the endpoints that read their own body, the statuses each route adds to the general rules, the query
parameters' bounds and enums, and the body checks said in JSON Schema. A new endpoint with a raw body
or a 409 of its own adds a line here.
"""

from __future__ import annotations

from typing import Any, get_args

import msgspec

from tms.library.cases.models import CASE_STATUSES, REVIEW_STATES, AutomationStatus, Layer, Priority
from tms.library.cases.search_store import SORTS as CASE_SORTS
from tms.library.transfer.csvfile import FORMATS as IMPORT_FORMATS
from tms.notifications.events import EVENT_NAMES
from tms.planning.milestones.models import MILESTONE_STATUSES
from tms.runs.ingest.models import IngestBody
from tms.runs.models import RUN_STATUSES
from tms.runs.results.models import ResultsBody
from tms.runs.statuses import RESULT_STATUSES

# Endpoints that read and decode their own body (gzip, per-item errors): method, path -> struct.
RAW_BODIES: dict[tuple[str, str], type[msgspec.Struct]] = {
    ("POST", "/api/v1/ingest"): IngestBody,
    ("POST", "/api/v1/runs/{run_id}/results"): ResultsBody,
}
# Statuses beyond the general rules, with what causes them (every `Conflict` a service raises, by route).
ARCHIVED = "The project is archived: it takes no new runs, ingests, plans, known issues or quarantine entries."
CLOSED_RUN = "The run is COMPLETED or SYNCED: cases are added to or removed from PENDING or IN_PROGRESS runs only."
SECTION_NAME = "A section of that name already exists under the same parent."
INACTIVE = "The subscription is inactive; activate it first."
EXTRA_STATUSES: dict[tuple[str, str], dict[int, str]] = {
    ("POST", "/api/v1/ingest"): {
        207: "Some results were rejected: `{run_id, accepted, rejected, errors: [{index, error}]}`.",
        409: "The Idempotency-Key was already used with a different body.",
        415: "A Content-Encoding other than gzip.",
    },
    ("POST", "/api/v1/runs/{run_id}/results"): {
        207: "Some results were rejected: `{accepted, rejected, errors: [{index, error}]}`.",
        415: "A Content-Encoding other than gzip.",
    },
    ("POST", "/api/v1/cases"): {409: "The code is already taken in this tenant."},
    ("PATCH", "/api/v1/cases/{case_id}"): {409: "The code is already taken in this tenant."},
    ("POST", "/api/v1/cases/import"): {409: "A code of the file was taken by another case meanwhile."},
    ("POST", "/api/v1/runs"): {409: ARCHIVED},
    ("POST", "/api/v1/runs/{run_id}/cases"): {409: CLOSED_RUN},
    ("DELETE", "/api/v1/runs/{run_id}/cases"): {409: CLOSED_RUN},
    ("POST", "/api/v1/plans"): {409: ARCHIVED},
    ("POST", "/api/v1/known-issues"): {409: ARCHIVED},
    ("POST", "/api/v1/quarantine"): {409: ARCHIVED},
    ("GET", "/api/v1/flaky"): {409: "The project is archived."},
    ("POST", "/api/v1/sections"): {409: SECTION_NAME},
    ("PATCH", "/api/v1/sections/{section_id}"): {
        409: SECTION_NAME + " Or the section would move under itself or one of its subsections."},
    ("DELETE", "/api/v1/sections/{section_id}"): {
        409: "A subsection would meet a section of the same name where it moves up to."},
    ("POST", "/api/webhooks/{subscription_id}/ping"): {409: INACTIVE},
    ("POST", "/api/webhooks/{subscription_id}/deliveries/{delivery_id}/redeliver"): {409: INACTIVE},
    ("POST", "/api/v1/results/{result_id}/attachments"): {
        415: "The file's type is not allowed, or its content does not match it.",
    },
}
# Query parameters the services check beyond their type (tms.http.paging and the list filters).
INT64_MAX = 2**63 - 1
PARAMETER_SCHEMAS: dict[str, dict[str, Any]] = {
    "limit": {"minimum": 1, "maximum": INT64_MAX},
    "offset": {"minimum": 0, "maximum": INT64_MAX},
    "runs": {"minimum": 2, "maximum": 200},  # /flaky: the window of runs (tms.failures.flaky.service)
}
PARAMETER_ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("/api/v1/cases", "status"): CASE_STATUSES,
    ("/api/v1/cases", "sort"): tuple(CASE_SORTS),
    ("/api/v1/cases", "order"): ("asc", "desc"),
    ("/api/v1/cases", "priority"): get_args(Priority),
    ("/api/v1/cases", "automation_status"): get_args(AutomationStatus),
    ("/api/v1/cases", "layer"): get_args(Layer),
    ("/api/v1/cases", "review"): REVIEW_STATES,
    ("/api/v1/runs", "status"): RUN_STATUSES,
    ("/api/v1/milestones", "status"): MILESTONE_STATUSES,
    ("/api/v1/cases/export", "format"): ("csv",),
    ("/api/v1/cases/import", "format"): IMPORT_FORMATS,
    ("/api/v1/runs/{run_id}/results", "status"): RESULT_STATUSES,
}
# Query parameters a handler types as optional but its service requires.
REQUIRED_QUERY = {("/api/v1/sections", "project_id"), ("/api/v1/cases/export", "project_id"),
                  ("/api/v1/cases/import", "project_id")}
# Body fields that exclude each other (a shard's run already has its name and environment).
EXCLUSIVE_FIELDS: dict[str, list[tuple[str, str]]] = {
    "IngestBody": [("run_id", "run_name"), ("run_id", "environment")],
}
# What the services check in a body beyond msgspec's types and lengths, said in JSON Schema:
# names trimmed and then refused when blank, Gherkin that must hold a Feature, webhook targets that
# must be absolute http(s) URLs of a named host (literal private addresses are refused at once; an
# https base_url also refuses http://), known event names, batches of at least one result.
NOT_BLANK = {"pattern": r"^[^\u0000]*[^\s\u0000][^\u0000]*$"}  # and no NUL (see NO_NUL)
# Gherkin's grammar is beyond JSON Schema: the pattern states the start (comments, tags, then a
# Feature); the official parser decides the rest, and its refusal is a 400 naming the line.
GHERKIN = {
    "pattern": r"^([ \t]*(#(?![ \t]*language[ \t]*:)[^\n\u0000]*|@[^\s@\u0000]+([ \t]+@[^\s@\u0000]+)*)?[ \t]*\r?\n)*"
               r"[ \t]*Feature:[^\u0000]*$",
    "description": "Gherkin that the official parser accepts, holding a Feature; otherwise 400 naming the line.",
}
WEBHOOK_URL = {"pattern": r"^https?://([A-Za-z0-9]([A-Za-z0-9-]{0,20}[A-Za-z0-9])?\.)*[A-Za-z]{2,20}"
                          r"(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~/-]*)?$"}
EVENTS = {"minItems": 1, "items": {"enum": list(EVENT_NAMES)}}
AT_LEAST_ONE = {"minItems": 1}
FIELD_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("ProjectCreate", "name"): NOT_BLANK,
    ("CaseCreate", "title"): NOT_BLANK,
    ("CaseUpdate", "title"): NOT_BLANK,
    ("RunCreate", "name"): NOT_BLANK,
    ("RunUpdate", "name"): NOT_BLANK,
    ("ProjectUpdate", "name"): NOT_BLANK,
    ("PlanCreate", "name"): NOT_BLANK,
    ("PlanUpdate", "name"): NOT_BLANK,
    ("MilestoneCreate", "name"): NOT_BLANK,
    ("MilestoneUpdate", "name"): NOT_BLANK,
    ("SectionCreate", "name"): NOT_BLANK,
    ("SectionUpdate", "name"): NOT_BLANK,
    ("KnownIssueCreate", "bug_ticket_key"): NOT_BLANK,
    ("KnownIssueUpdate", "bug_ticket_key"): NOT_BLANK,
    ("QuarantineCreate", "reason"): NOT_BLANK,
    ("ReviewReject", "comment"): NOT_BLANK,
    ("RunRerun", "name"): NOT_BLANK,
    ("CaseCreate", "bdd_content"): GHERKIN,
    ("CaseUpdate", "bdd_content"): GHERKIN,
    ("SubscriptionCreate", "url"): WEBHOOK_URL,
    ("SubscriptionUpdate", "url"): WEBHOOK_URL,
    ("SubscriptionCreate", "events"): EVENTS,
    ("SubscriptionUpdate", "events"): EVENTS,
    ("IngestBody", "results"): AT_LEAST_ONE,
    ("Filters", "environments"): {"items": NOT_BLANK},
    ("ResultsBody", "results"): AT_LEAST_ONE,
    ("QuarantineCreate", "expires_at"): {"format": "date-time"},
}

ERROR_TEXT = {
    400: "Invalid input: malformed JSON, a wrong type or value, an unknown field; `errors` names each field.",
    401: "No valid credentials: a Bearer token on /api/v1 (`WWW-Authenticate: Bearer`), a session on /api.",
    403: "The token lacks the scope this operation needs (or the session request lacks its CSRF token).",
    404: "An id that does not exist, or belongs to another tenant.",
    413: "The body (or a file) is larger than allowed.",
    507: "The server's disk is full: nothing was stored; reads keep working, and writes once space is freed.",
}
PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "RFC 9457 problem details.",
    "type": "object",
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                "required": ["field", "message"],
            },
        },
    },
    "required": ["type", "title", "status", "detail"],
}
