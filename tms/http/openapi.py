"""The served OpenAPI document, made to say what the API really does.

Litestar documents the happy path; this module finishes the document once, before it is first served:

- request bodies come from msgspec's own schema of the struct the server decodes with, so they carry
  ``additionalProperties: false`` and every bound (lengths, enums, patterns) exactly as enforced;
  the two endpoints that read their body themselves (ingest, POST results: gzip, per-item checks)
  get their request body documented here;
- every error status an operation can answer is declared with ``application/problem+json``
  (RFC 9457): 400 when it takes parameters or a body, 401 and 403 (token or session, scope or CSRF),
  404 for ids in the path or in the body, 409/413/415 where they occur, 507 on every write (disk
  full); 207 for the bulk writes;
- checks the server makes beyond types and lengths are stated as patterns where JSON Schema can say
  them (a name that must not be blank, a Gherkin text that must hold a ``Feature:``).

A new endpoint is covered by these rules without touching this file; one with a raw body or a 409
of its own adds a line to the tables in ``openapi_rules.py``.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec
from litestar import Litestar, Request
from litestar.openapi.plugins import JsonRenderPlugin

from tms.http.openapi_rules import (
    ERROR_TEXT,
    EXCLUSIVE_FIELDS,
    EXTRA_STATUSES,
    FIELD_SCHEMAS,
    PARAMETER_ENUMS,
    PARAMETER_SCHEMAS,
    PROBLEM_SCHEMA,
    RAW_BODIES,
    REQUIRED_QUERY,
)
from tms.http.problems import PROBLEM_JSON
from tms.runs.ingest.models import NUL_REPLACED_FIELDS

REF = "#/components/schemas/{name}"
_PATH_PARAM = re.compile(r"\{([^}:]+)(?::[^}]*)?\}")

_finished: set[int] = set()


def _route_bodies(app: Litestar) -> dict[tuple[str, str], type[msgspec.Struct]]:
    """(method, path) -> the struct of each handler's ``data`` parameter, plus the raw-body table."""
    from tms.http.bodies import _json_body_type

    found = dict(RAW_BODIES)
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            body_type = _json_body_type(handler)
            if body_type is not None:
                for method in handler.http_methods:
                    found[(method, route.path_format)] = body_type
    return found


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_JSON: {"schema": {"$ref": REF.format(name="Problem")}}}}


def _request_schemas(bodies: dict[tuple[str, str], type[msgspec.Struct]]) -> tuple[dict[type, Any], dict[str, Any]]:
    types = sorted(set(bodies.values()), key=lambda t: t.__name__)
    refs, components = msgspec.json.schema_components(types, ref_template=REF)
    for (name, field), extra in FIELD_SCHEMAS.items():
        _constrain(components.get(name), field, extra)
    for name, pairs in EXCLUSIVE_FIELDS.items():
        if name in components:
            components[name]["allOf"] = [{"not": {"required": list(pair)}} for pair in pairs]
    for name, component in components.items():
        for field, schema in component.get("properties", {}).items():
            if (name, field) not in NUL_KEPT:
                _no_nul(schema)
    for name in ("CaseCreate", "CaseUpdate", "ResultIn", "ResultPatch"):
        values = components.get(name, {}).get("properties", {}).get("custom_fields")
        for option in [] if values is None else values.get("anyOf", [values]):
            if option.get("type") == "object":
                option.update(CUSTOM_FIELD_VALUES)
    for name in ("IngestBody", "ResultsBody"):
        results = components.get(name, {}).get("properties", {}).get("results")
        if results is not None and "items" in results:
            item = results["items"]
            results["items"] = {"anyOf": [item, ITEM_REJECTED_ALONE]}
            if name == "IngestBody":  # ingest stores a run only with a result: all items rejected is a 400
                results["contains"] = item
    return dict(zip(types, refs, strict=True)), components


# A result item that is not a ResultIn does not fail the batch: it is rejected alone, in the 207 answer.
# (Any JSON without NUL would be true, but JSON Schema cannot say "no NUL at any depth": flat objects.)
ITEM_REJECTED_ALONE = {
    "description": "Any other item is rejected on its own: `errors` of the 207 answer names its index and why "
                   "(the valid items are stored).",
    "type": "object",
    "propertyNames": {"pattern": r"^[^\u0000]*$"},
    "additionalProperties": {"type": ["string", "number", "boolean", "null"], "pattern": r"^[^\u0000]*$"},
}

# A case's or a result's custom_fields: keys are field keys, values the JSON kinds a field holds (text, number,
# checkbox, multiselect, empty). Which key exists and which kind it takes are the project's field
# definitions, data rather than schema: the server names `custom_fields.<key>` when they disagree.
CUSTOM_FIELD_VALUES: dict[str, Any] = {
    "propertyNames": {"pattern": r"^[a-z0-9_]{1,64}$"},
    "additionalProperties": {"anyOf": [
        {"type": "string", "pattern": r"^[^\u0000]*$"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
        {"type": "array", "items": {"type": "string", "pattern": r"^[^\u0000]*$"}},
    ]},
}

# Text holding NUL (U+0000) is refused everywhere (a 400 naming the field, tms.http.bodies): PostgreSQL
# cannot store it. Except the free text of result items, stored with U+FFFD instead, and the search.
NO_NUL = r"^[^\u0000]*$"
NUL_KEPT = {("ResultIn", field) for field in NUL_REPLACED_FIELDS}
NUL_TOLERANT_PARAMETERS = {"q"}


def _no_nul(schema: dict[str, Any]) -> None:
    """Says "no NUL" in every string of ``schema`` (its alternatives, its items) that allows one: a
    pattern of its own is kept, and the rule added beside it with ``not``."""
    for option in schema.get("anyOf", schema.get("oneOf", [schema])):
        if option.get("type") == "array" and isinstance(option.get("items"), dict):
            _no_nul(option["items"])
        if option.get("type") != "string" or "enum" in option or "format" in option:
            continue
        if "pattern" not in option:
            option["pattern"] = NO_NUL
        elif option["pattern"] != NO_NUL and "[^" not in option["pattern"]:
            option["not"] = {"pattern": r"\u0000"}


def _constrain(component: dict[str, Any] | None, field: str, extra: dict[str, Any]) -> None:
    """Adds ``extra`` to the field's string or array alternative (not to its ``null`` one)."""
    if component is None or field not in component.get("properties", {}):
        return
    schema = component["properties"][field]
    for option in schema.get("anyOf", [schema]):
        if option.get("type") in ("string", "array"):
            for key, value in extra.items():
                if isinstance(value, dict) and isinstance(option.get(key), dict):
                    option[key] = {**option[key], **value}
                else:
                    option[key] = value


def finish(app: Litestar, document: dict[str, Any]) -> dict[str, Any]:
    """Completes Litestar's document in place (once; the render plugins share the one dict)."""
    if id(document) in _finished:
        return document
    bodies = _route_bodies(app)
    refs, components = _request_schemas(bodies)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(copy.deepcopy(components))
    schemas["Problem"] = PROBLEM_SCHEMA
    _fix_raw_fields(schemas)
    for path, operations in document.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for method, operation in operations.items():
            _finish_operation(path, method.upper(), operation, bodies, refs)
    _finished.add(id(document))
    return document


def _finish_operation(path: str, method: str, operation: dict[str, Any],
                      bodies: dict[tuple[str, str], type[msgspec.Struct]], refs: dict[type, Any]) -> None:
    key = (method, _PATH_PARAM.sub(r"{\1}", path))
    body_type = bodies.get(key)
    if body_type is not None:
        content = {"application/json": {"schema": refs[body_type]}}
        if key in RAW_BODIES:
            operation["description"] = (operation.get("description") or "") + (
                " The body may be sent with `Content-Encoding: gzip`.")
        operation["requestBody"] = {"required": True, "content": content}
    for parameter in operation.get("parameters", []):
        _bound_parameter(key[1], parameter)
    _fix_files(operation)
    has_body = "requestBody" in operation
    responses = operation.setdefault("responses", {})
    statuses: dict[int, str] = {401: ERROR_TEXT[401]}
    if operation.get("parameters") or has_body:
        statuses[400] = ERROR_TEXT[400]
    scoped = any(scopes for requirement in operation.get("security", []) for scopes in requirement.values())
    if scoped or (path.startswith("/api/webhooks") and method != "GET"):
        statuses[403] = ERROR_TEXT[403]
    names_resource = any(p.get("required") and p.get("name", "").endswith("_id")
                         for p in operation.get("parameters", []) if p.get("in") == "query")
    if "{" in path or names_resource or (has_body and body_type is not None and _names_ids(body_type)):
        statuses[404] = ERROR_TEXT[404]
    if has_body:
        statuses[413] = ERROR_TEXT[413]
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        statuses[507] = ERROR_TEXT[507]
    for status, text in EXTRA_STATUSES.get(key, {}).items():
        statuses[status] = text
    for status, text in sorted(statuses.items()):
        if 200 <= status < 300:
            ok = next((r for s, r in responses.items() if s.startswith("2")), None)
            responses[str(status)] = {"description": text, **({"content": ok["content"]} if ok and "content" in ok
                                                              else {})}
        else:
            responses[str(status)] = _problem(text)


# Response fields the server passes through as stored JSON (msgspec.Raw: Litestar documents "anything",
# which with its null alternative matched null twice), said as what they hold.
# (component, field) -> (the component its schema refers to, the schema)
RAW_FIELDS: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("Result", "step_results"): ("StepResult", {"type": "array", "items": {"$ref": REF.format(name="StepResult")}}),
}


_ANNOTATIONS = {"examples", "description", "title"}  # keys that constrain nothing


def _fix_raw_fields(schemas: dict[str, Any]) -> None:
    """A field documented as ``oneOf: [{}, {type: null}]`` (null valid under both; ``{}`` may carry
    ``examples``) becomes its real
    schema or null (``RAW_FIELDS``), else simply "anything" (which includes null)."""
    for name, component in schemas.items():
        for field, schema in component.get("properties", {}).items():
            options = schema.get("oneOf") or schema.get("anyOf") or []
            if not any(isinstance(option, dict) and set(option) <= _ANNOTATIONS for option in options):
                continue
            needs, real = RAW_FIELDS.get((name, field), ("", {}))
            if real and needs in schemas:
                component["properties"][field] = {"oneOf": [real, {"type": "null"}]}
            else:
                component["properties"][field] = {}


def _fix_files(operation: dict[str, Any]) -> None:
    """File uploads and downloads as they really are: an upload takes ``file`` parts and nothing else;
    a download answers the stored file's own type, with an HTTP-date (not RFC 3339) Last-Modified."""
    upload = operation.get("requestBody", {}).get("content", {}).get("multipart/form-data", {}).get("schema")
    if upload and upload.get("type") == "object":
        upload["additionalProperties"] = False
        for field in upload.get("properties", {}).values():
            if field.get("type") == "array":
                field["minItems"] = 1
    for response in operation.get("responses", {}).values():
        content = response.get("content", {})
        if "" in content:
            content["*/*"] = {"schema": {"type": "string", "format": "binary"}}
            del content[""]
        modified = response.get("headers", {}).get("last-modified", {})
        if modified.get("schema", {}).get("format") == "date-time":
            modified["schema"] = {"type": "string"}
            modified["description"] = "When the file was stored, as an HTTP-date"


def _bound_parameter(path: str, parameter: dict[str, Any]) -> None:
    """A query parameter as the server reads it: absent means "not given" (a ``null`` alternative
    would be sent as the text "null"), integers within their bounds, filters within their choices."""
    if parameter.get("in") == "path":
        _no_nul(parameter.setdefault("schema", {}))  # an id with NUL names nothing: 404
    if parameter.get("in") != "query":
        return
    schema = parameter.get("schema", {})
    options = [o for o in schema.get("oneOf", schema.get("anyOf", [schema])) if o.get("type") != "null"]
    if len(options) != 1:
        return
    (schema,) = options
    name = parameter.get("name", "")
    if (path, name) in REQUIRED_QUERY:
        parameter["required"] = True
    if schema.get("type") == "integer":
        for bound, value in PARAMETER_SCHEMAS.get(name, {}).items():
            schema.setdefault(bound, value)  # a handler's own bound (ge/le) stays
    if schema.get("type") == "string" and (path, name) in PARAMETER_ENUMS:
        schema["enum"] = list(PARAMETER_ENUMS[(path, name)])
    if name not in NUL_TOLERANT_PARAMETERS:
        _no_nul(schema)
    parameter["schema"] = schema


def _names_ids(body_type: type[msgspec.Struct]) -> bool:
    """Whether a body names other resources (a project, cases) that may not exist: 404."""
    return any(name.endswith(("_id", "_ids")) for name in body_type.__struct_fields__)


class JsonDocument(JsonRenderPlugin):
    """/schema/openapi.json, finished (the /schema page lists operations only: nothing to finish)."""

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, finish(request.app, openapi_schema))
