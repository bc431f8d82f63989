"""`tms mcp` driven by the official MCP SDK's client over stdio, against a real server."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import ROOT, Tenant
from tests.test_cases import FEATURE, new_case

T = TypeVar("T")
READ_TOOLS = {"list_projects", "search_cases", "get_case", "list_runs", "get_run", "run_failures",
              "compare_runs", "list_quarantine"}


def with_mcp(tenant: Tenant, scope: str, work: Callable[[ClientSession], Awaitable[T]]) -> T:
    token = {"write": tenant.write_token, "read": tenant.read_token}[scope]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tms", "mcp", "--url", tenant.server.url, "--token", token], cwd=str(ROOT)
    )

    async def run() -> T:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)

    return asyncio.run(run())


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[bool, Any]:
    """(is_error, the JSON answer or the error text)."""
    result = await session.call_tool(name, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        return True, text
    return False, result.structured_content if result.structured_content is not None else json.loads(text)


def test_read_token_gets_only_read_tools_and_write_token_gets_create_and_update(tenant: Tenant) -> None:
    async def names(session: ClientSession) -> dict[str, Any]:
        return {tool.name: tool for tool in (await session.list_tools()).tools}

    read_tools = with_mcp(tenant, "read", names)
    assert set(read_tools) == READ_TOOLS
    assert all(tool.annotations and tool.annotations.read_only_hint for tool in read_tools.values())
    write_tools = with_mcp(tenant, "write", names)
    assert set(write_tools) == READ_TOOLS | {"create_case", "update_case"}
    schema = write_tools["create_case"].input_schema
    assert set(schema["required"]) == {"title", "bdd_content"}
    assert schema["properties"]["priority"]["anyOf"][0]["enum"] == ["LOW", "MEDIUM", "HIGH", "CRITICAL"]


def test_search_read_create_update_and_gherkin_errors(tenant: Tenant) -> None:
    project = tenant.create_project("Shop")
    existing = new_case(tenant, title="Login works", project_id=project["id"])
    bad_gherkin = "Feature: Checkout\n  Scenario: pay\n    Given a cart\n    This is not a step\n"

    async def work(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["projects"] = await call(session, "list_projects")
        out["search"] = await call(session, "search_cases", project_id=project["id"])
        out["get"] = await call(session, "get_case", case=existing["code"])
        out["missing"] = await call(session, "get_case", case="NOPE-1")
        out["created"] = await call(session, "create_case", title="Pay by card", bdd_content=FEATURE,
                                    project_id=project["id"], priority="HIGH", tags=["checkout"])
        out["bad"] = await call(session, "create_case", title="Broken", bdd_content=bad_gherkin)
        code = out["created"][1]["data"]["code"]
        out["updated"] = await call(session, "update_case", case=code, status="READY")
        out["bad_update"] = await call(session, "update_case", case=code, bdd_content="Scenario without feature")
        out["empty_update"] = await call(session, "update_case", case=code)
        out["bad_enum"] = await call(session, "create_case", title="x", bdd_content=FEATURE, priority="URGENT")
        return out

    out = with_mcp(tenant, "write", work)
    assert out["projects"] == (False, {"data": [out["projects"][1]["data"][0]]})
    assert out["projects"][1]["data"][0]["id"] == project["id"]
    error, search = out["search"]
    assert not error and [case["code"] for case in search["data"]] == [existing["code"]]
    assert search["pagination"]["total"] == 1
    assert out["get"][1]["data"]["bdd_content"] == existing["bdd_content"]
    assert out["missing"][0] is True and "404" in out["missing"][1] and "NOPE-1" in out["missing"][1]

    error, created = out["created"]
    assert not error, created
    case = created["data"]
    assert (case["title"], case["priority"], case["tags"], case["project_id"]) == (
        "Pay by card", "HIGH", ["checkout"], project["id"])
    # the server validated the Gherkin: its 400 arrives as a tool error naming the field and the line
    error, text = out["bad"]
    assert error and "HTTP 400" in text and "bdd_content" in text and "line 4" in text, text
    assert out["updated"][1]["data"]["status"] == "READY"
    assert out["bad_update"][0] is True and "bdd_content" in out["bad_update"][1]
    assert out["empty_update"][0] is True and "nothing to change" in out["empty_update"][1]
    assert out["bad_enum"][0] is True and "priority" in out["bad_enum"][1]

    # the writes really happened, once
    listed = tenant.api.get("/api/v1/cases", params={"project_id": project["id"]}).json()
    assert sorted(c["title"] for c in listed["data"]) == ["Login works", "Pay by card"]


def test_runs_failures_comparison_and_quarantine_over_the_api(tenant: Tenant) -> None:
    project = tenant.create_project()
    runs = []
    for status in ("PASSED", "FAILED"):
        response = tenant.api.post("/api/v1/ingest", json={
            "project_id": project["id"], "run_name": f"run {status}",
            "results": [{"title": "checkout", "status": status, "error_message": "boom 42"}]})
        assert response.status_code == 201, response.text
        runs.append(response.json()["run_id"])

    async def work(session: ClientSession) -> dict[str, Any]:
        return {
            "runs": await call(session, "list_runs", project_id=project["id"]),
            "run": await call(session, "get_run", run_id=runs[1]),
            "failures": await call(session, "run_failures", run_id=runs[1]),
            "failures_missing_run": await call(session, "run_failures", run_id="no-such-run"),
            "compare": await call(session, "compare_runs", run_id=runs[1], base_run_id=runs[0]),
            "quarantine": await call(session, "list_quarantine", project_id=project["id"]),
            "write": await call(session, "create_case", title="x", bdd_content=FEATURE),
        }

    out = with_mcp(tenant, "read", work)
    error, listed = out["runs"]
    assert not error and [run["id"] for run in listed["data"]] == runs
    assert out["run"][1]["data"]["counts"]["failed"] == 1
    # a missing run is the run's own 404, never blamed on the server's version
    error, text = out["failures_missing_run"]
    assert error and "HTTP 404" in text and "no-such-run" in text
    # these endpoints come with the failure-analysis API; an older server gets a clear error instead
    error, failures = out["failures"]
    if error:
        assert "does not provide failure clusters" in failures and "upgrade" in failures
    else:
        assert failures["data"][0]["count"] == 1 and failures["data"][0]["results"][0]["title"] == "checkout"
    error, compare = out["compare"]
    if error:
        assert "does not provide run comparison" in compare
    else:
        assert compare["data"]["new_failures"][0]["title"] == "checkout"
    error, quarantine = out["quarantine"]
    assert (error and "does not provide a quarantine list" in quarantine) or quarantine.get("data") == []
    # a read-only session has no write tool to call
    assert out["write"][0] is True and "create_case" in out["write"][1]


def test_mcp_refuses_to_start_without_a_usable_token(tenant: Tenant) -> None:
    import subprocess

    missing = subprocess.run([sys.executable, "-m", "tms", "mcp"], capture_output=True, text=True, cwd=ROOT,
                             env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert missing.returncode == 2 and "--url and --token" in missing.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "tms", "mcp", "--url", tenant.server.url, "--token", "svc_badbadba_" + "x" * 40],
        capture_output=True, text=True, cwd=ROOT, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert bad.returncode == 4 and "HTTP 401" in bad.stderr and "x" * 40 not in bad.stderr
    assert bad.stdout == ""  # standard output belongs to the protocol


def test_compare_with_an_unknown_or_foreign_base_names_the_base(tenant: Tenant, other_tenant: Tenant) -> None:
    project, elsewhere = tenant.create_project(), tenant.create_project()

    def ingest(on: Tenant, project_id: str, status: str) -> str:
        response = on.api.post("/api/v1/ingest", json={
            "project_id": project_id, "run_name": f"run {status}",
            "results": [{"title": "checkout", "status": status}]})
        assert response.status_code == 201, response.text
        return str(response.json()["run_id"])

    base, run = ingest(tenant, project["id"], "PASSED"), ingest(tenant, project["id"], "FAILED")
    other_project = ingest(tenant, elsewhere["id"], "PASSED")
    other_tenants = ingest(other_tenant, other_tenant.create_project()["id"], "PASSED")

    async def work(session: ClientSession) -> dict[str, Any]:
        return {name: await call(session, "compare_runs", run_id=run, base_run_id=base_id) for name, base_id in (
            ("ok", base), ("unknown", "no-such-run"), ("other_project", other_project),
            ("other_tenant", other_tenants))}

    out = with_mcp(tenant, "read", work)
    assert out["ok"][0] is False and out["ok"][1]["data"]["base_run_id"] == base
    for name, base_id in (("unknown", "no-such-run"), ("other_project", other_project),
                          ("other_tenant", other_tenants)):
        error, text = out[name]
        assert error and "HTTP 404" in text and base_id in text and "base" in text, (name, text)
        assert "does not provide" not in text, (name, text)


def test_ids_and_codes_cannot_reach_another_route(tenant: Tenant) -> None:
    project = tenant.create_project()
    case = new_case(tenant, title="Versioned", project_id=project["id"])

    async def work(session: ClientSession) -> dict[str, Any]:
        return {
            "versions": await call(session, "get_case", case=f"{case['code']}/versions"),
            "dot": await call(session, "get_case", case=".."),
            "empty": await call(session, "get_case", case="  "),
            "run": await call(session, "get_run", run_id="x/results"),
            "failures": await call(session, "run_failures", run_id="../cases"),
            "odd": await call(session, "get_case", case="A?B#C%2F"),
            "update": await call(session, "update_case", case=f"{case['code']}/versions", status="READY"),
        }

    out = with_mcp(tenant, "write", work)
    for name, value in (("versions", f"{case['code']}/versions"), ("run", "x/results"),
                        ("failures", "../cases"), ("update", f"{case['code']}/versions")):
        error, text = out[name]
        assert error and repr(value) in text and "must not contain '/'" in text, (name, text)
    assert out["dot"][0] and "'..'" in out["dot"][1]
    assert out["empty"][0] and "empty" in out["empty"][1]
    # other characters are escaped: the server looks for exactly that code and does not find it
    assert out["odd"][0] and "HTTP 404" in out["odd"][1] and "A?B#C%2F" in out["odd"][1]
    assert tenant.api.get(f"/api/v1/cases/{case['id']}").json()["data"]["status"] != "READY"
