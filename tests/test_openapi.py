"""The served OpenAPI document tells the truth: schemathesis over the whole API, against a real server.

For every operation schemathesis generates requests from the document (a bounded number of examples)
and checks that the server never answers 5xx, answers only statuses and content types the document
declares, answers in the declared response schema, and accepts every request the document says is
valid. /api/v1 is called with a read+write token, /api/webhooks and /api/v1/notifications with a
signed-in session.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import load_all_checks, not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import ServerProcess, Tenant, make_tenant_on

load_all_checks()


# Refusals of schema-valid bodies that JSON Schema cannot state, each a 400 naming its field:
# Gherkin the official parser refuses (a grammar), references that exist nowhere, and the two
# "one of these fields" rules of known issues and quarantine entries.
SEMANTIC_REFUSALS = {
    "bdd_content": "not valid Gherkin",
    "test_case_ids": "no such test case",
    "assignee_id": "is not a user of this team",
    "fingerprint": "give a fingerprint or a pattern",
    "test_case_code": "name the test by exactly one of test_case_code or title",
    "expires_at": "must be in the future",  # relative to the moment of the request
    # a comment's Markdown (issue 26): blank, a non-web link, scripts, or an @mention of no team member
    "body": "body: ",
    # a shared step's steps: step lines alone (a grammar), naming shared steps that exist, no cycle
    "steps": "",
}


# Refusals that depend on data or on another field's value, each a 400 naming its field: a case's
# custom_fields follow the project's field definitions (which keys exist, which kind each takes), a
# custom field's default follows its type, and a tracker integration's settings follow its kind.
DEPENDENT_REFUSALS = {
    "default": "must be",
    "options": "are for select and multiselect",
    # a tracker's own spelling of where issues go: GitHub owner/name, GitLab group/project, Jira key
    "project_path": "",
    "repository": "",
    "project_key": "",
    "api_user": "",
}


def _depends_on_data(error: dict[str, Any]) -> bool:
    field, message = error.get("field") or "", error.get("message") or ""
    return field.startswith("custom_fields.") or DEPENDENT_REFUSALS.get(field, "\0") in message


# JSON Schema counts 498.0 as an integer; the server reads integers strictly and refuses a number
# written with a decimal point where an integer belongs (400 naming the field).
INTEGER_WRITTEN_AS_FLOAT = "got `float`"


@schemathesis.check
def accepts_schema_valid_data(ctx: Any, response: Any, case: Any) -> bool | None:
    """positive_data_acceptance, less the semantic refusals above."""
    if response.status_code == 400:
        errors = response.json().get("errors") or []
        if len(errors) == 1 and SEMANTIC_REFUSALS.get(errors[0].get("field"), "\0") in errors[0].get("message", ""):
            return None
        if len(errors) == 1 and errors[0].get("message", "").endswith(INTEGER_WRITTEN_AS_FLOAT):
            return None
        if len(errors) == 1 and _depends_on_data(errors[0]):
            return None
    return positive_data_acceptance(ctx, response, case)  # type: ignore[no-any-return]


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance, accepts_schema_valid_data]
# bounded for the suite; TMS_SCHEMATHESIS_EXAMPLES=200 digs deeper by hand
MAX_EXAMPLES = int(os.environ.get("TMS_SCHEMATHESIS_EXAMPLES", "12"))


@pytest.fixture(scope="module")
def caller(server: ServerProcess) -> dict[str, Any]:
    tenant: Tenant = make_tenant_on(server)
    project = tenant.create_project("Schemathesis")
    tenant.api.post("/api/v1/cases", json={"title": "A case", "project_id": project["id"],
                                           "bdd_content": "Feature: f\n  Scenario: s\n    Given a step\n"})
    web = tenant.web()
    return {
        "api": {"Authorization": f"Bearer {tenant.write_token}"},
        "session": {"x-csrftoken": web.headers["x-csrftoken"]},
        "cookies": dict(web.cookies),
    }


def test_every_operation_answers_as_documented(server: ServerProcess, caller: dict[str, Any]) -> None:
    """One Hypothesis run per operation (schemathesis' pytest plugin does not load under pytest 9)."""
    schema = schemathesis.openapi.from_url(f"{server.url}/schema/openapi.json")
    failures: list[str] = []
    tested = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def call(case: Any) -> None:
            if case.path.startswith("/api/v1/") and not case.path.startswith("/api/v1/notifications"):
                case.call_and_validate(headers=caller["api"], checks=CHECKS)
            else:
                case.call_and_validate(headers=caller["session"], cookies=caller["cookies"], checks=CHECKS)

        try:
            call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # failed checks (an exception group), explained, with a curl line
            failures.append(f"{operation.label}:\n{exc}")
        tested += 1
    assert tested >= 25
    assert not failures, "\n\n".join(failures)


def test_request_bodies_are_closed_and_bounded(server: ServerProcess) -> None:
    import httpx

    document = httpx.get(f"{server.url}/schema/openapi.json").json()
    schemas = document["components"]["schemas"]
    for name in ("IngestBody", "ResultsBody", "ResultIn", "CaseCreate", "CaseUpdate", "RunCreate", "ProjectCreate"):
        assert schemas[name]["additionalProperties"] is False, name
    assert schemas["ResultIn"]["properties"]["status"]["enum"] == ["BROKEN", "FAILED", "PASSED", "SKIPPED", "UNKNOWN"]
    ingest = document["paths"]["/api/v1/ingest"]["post"]
    assert ingest["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/IngestBody"}
    assert {"201", "207", "400", "401", "403", "404", "409", "413", "415"} <= set(ingest["responses"])
    assert set(ingest["responses"]["400"]["content"]) == {"application/problem+json"}
    results = document["paths"]["/api/v1/runs/{run_id}/results"]["post"]
    assert results["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ResultsBody"}


def test_null_is_not_a_number_in_the_query(tenant: Tenant) -> None:
    """``?offset=null`` was read as "no offset" while the document says an integer: now a 400 naming it."""
    for path in ("/api/v1/runs", "/api/v1/cases", "/api/v1/audit"):
        for name in ("offset", "limit"):
            response = tenant.api.get(path, params={name: "null"})
            assert response.status_code == 400, (path, name, response.text)
            assert [e["field"] for e in response.json()["errors"]] == [name]
    assert tenant.api.get("/api/v1/runs", params={"offset": 0}).status_code == 200
    # beyond the documented integer range (int64) is refused too, not clamped
    assert tenant.api.get("/api/v1/runs", params={"limit": 2**63}).status_code == 400
    assert tenant.api.get("/api/v1/runs", params={"limit": 2**63 - 1}).json()["pagination"]["limit"] == 500


def test_step_results_is_documented_once_as_steps_or_null(server: ServerProcess) -> None:
    import httpx

    schemas = httpx.get(f"{server.url}/schema/openapi.json").json()["components"]["schemas"]
    assert schemas["Result"]["properties"]["step_results"] == {"oneOf": [
        {"type": "array", "items": {"$ref": "#/components/schemas/StepResult"}}, {"type": "null"}]}
    for name, component in schemas.items():
        for field, schema in component.get("properties", {}).items():
            for option in schema.get("oneOf") or schema.get("anyOf") or []:
                assert set(option) - {"examples", "description", "title"}, (name, field)


def test_favicon_is_the_svg_icon(server: ServerProcess) -> None:
    import httpx

    response = httpx.get(f"{server.url}/favicon.ico")
    assert response.status_code == 301 and response.headers["location"] == "/static/favicon.svg"
    icon = httpx.get(f"{server.url}/favicon.ico", follow_redirects=True)
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in icon.content
