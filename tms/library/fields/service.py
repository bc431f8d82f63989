"""Custom fields: a project's typed fields (create, rename, reorder, retire) and how a `cf.<key>=`
filter reads (``case_filters``). The rules about a value (its type, options, defaults, required fields,
unknown and retired keys) are in ``values.py``, which needs no database.

A field's key, type and entity never change (values are stored under the key, as JSON on the case);
retiring a field hides it from forms and refuses new values, and keeps every value cases hold. Result
fields (entity ``result``) are defined and checked here (``validate_result_fields``); storing them on
results belongs to the writer of results.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import Conflict, InvalidInput, NotFound
from tms.ids import new_id, now_iso
from tms.library.fields import store as field_store
from tms.library.fields.models import ENTITIES, CustomField, CustomFieldCreate, CustomFieldUpdate
from tms.library.fields.values import (
    CHOICES,
    EMPTY,
    NO_RESULT_FIELDS,
    OPTION_SEPARATOR,
    ResultFieldRules,
    Users,
    check_value,
    encode,
    merge_case_fields,
    needs_users,
)
from tms.library.projects import store as project_store
from tms.team import service as team_service
from tms.team.audit import service as audit

_options = msgspec.json.Decoder(list[str])
_encoder = msgspec.json.Encoder()


def field_from_row(row: Row) -> CustomField:
    default = row["default_value"]
    return CustomField(
        id=row["id"], project_id=row["project_id"], key=row["key"], name=row["name"], type=row["type"],
        entity=row["entity"], options=_options.decode(row["options"]), required=bool(row["required"]),
        default=None if default is None else msgspec.json.decode(default), position=row["position"],
        retired=row["retired_at"] is not None, created_at=row["created_at"], updated_at=row["updated_at"],
    )




async def tenant_users(db: Database, tenant_id: str) -> dict[str, str]:
    """What a `user` field accepts in this tenant: each user's id and e-mail (lower-cased) -> the id."""
    users: dict[str, str] = {}
    for row in await team_service.list_users(db, tenant_id):
        users[row["id"]] = row["id"]
        users[str(row["email"]).lower()] = row["id"]
    return users


# --------------------------------------------------------------------------------------------- reading


async def _project_or_404(db: Database | Transaction, tenant_id: str, project_id: str) -> None:
    if not await project_store.project_exists(db, tenant_id, project_id):
        raise NotFound(f"project {project_id} not found", field="project_id")


async def list_fields(db: Database, tenant_id: str, project_id: str | None,
                      entity: str | None = None) -> list[CustomField]:
    if not project_id:
        raise InvalidInput("project_id is required: custom fields belong to a project", field="project_id")
    if entity is not None and entity not in ENTITIES:
        raise InvalidInput(f"entity must be one of {', '.join(ENTITIES)}", field="entity")
    await _project_or_404(db, tenant_id, project_id)
    return [field_from_row(row) for row in await field_store.list_for_project(db, tenant_id, project_id, entity)]


async def fields_of(db: Database | Transaction, tenant_id: str, project_id: str | None,
                    entity: str = "case") -> dict[str, CustomField]:
    """{key: field} of a project for cases (or results), in order, retired ones included; {} without a project."""
    if project_id is None:
        return {}
    rows = await field_store.list_for_project(db, tenant_id, project_id, entity)
    return {row["key"]: field_from_row(row) for row in rows}


async def get_field(db: Database, tenant_id: str, field_id: str) -> CustomField:
    row = await field_store.get_field(db, tenant_id, field_id)
    if row is None:
        raise NotFound(f"custom field {field_id} not found")
    return field_from_row(row)


# --------------------------------------------------------------------------------------------- writing


def _clean_options(kind: str, options: list[str] | None) -> list[str]:
    options = [" ".join(option.split()) for option in options or []]
    if kind not in CHOICES:
        if options:
            raise InvalidInput(f"options are for select and multiselect fields, not {kind}", field="options")
        return []
    if not options or not all(options):
        raise InvalidInput(f"a {kind} field needs its options (a list of non-blank names)", field="options")
    repeated = sorted({option for option in options if options.count(option) > 1})
    if repeated:
        raise InvalidInput(f"option {repeated[0]!r} is given twice", field="options")
    if kind == "multiselect" and any(OPTION_SEPARATOR in option for option in options):
        raise InvalidInput("a multiselect option must not contain ';' (it separates options in CSV)", field="options")
    return options


def _clean_default(field: CustomField, default: Any, users: Users | None) -> str | None:
    """The default as stored (JSON) after the same check as any value (400 naming ``default``)."""
    try:
        value = check_value(field, default, users)
    except InvalidInput as exc:
        raise InvalidInput(f"default: {exc.detail.split(': ', 1)[1]}", field="default") from None
    return None if value is None else _encoder.encode(value).decode()


# Fields a project may hold, retired ones included (they keep their stored values): every case and result
# form, the list's column picker and each write's checks walk the project's fields, and the list endpoint
# answers them all in one page.
MAX_FIELDS_PER_PROJECT = 100


async def _check_room(tx: Transaction, tenant_id: str, project_id: str, adding: int) -> None:
    if await field_store.count_for_project(tx, tenant_id, project_id) + adding > MAX_FIELDS_PER_PROJECT:
        raise Conflict(f"a project holds at most {MAX_FIELDS_PER_PROJECT} custom fields (retired ones count: "
                       "they keep their values)", field="project_id")


async def create_field(db: Database, tenant_id: str, body: CustomFieldCreate) -> CustomField:
    name = " ".join(body.name.split())
    if not name:
        raise InvalidInput("name must not be blank", field="name")
    options = _clean_options(body.type, body.options)
    now = now_iso()
    draft = CustomField(id=new_id(), project_id=body.project_id, key=body.key, name=name, type=body.type,
                        entity=body.entity, options=options, required=body.required, default=None,
                        position=body.position or 0, retired=False, created_at=now, updated_at=now)
    users = await tenant_users(db, tenant_id) if body.type == "user" and body.default is not None else None
    default = _clean_default(draft, body.default, users)
    async with db.transaction() as tx:
        await _project_or_404(tx, tenant_id, body.project_id)
        if await field_store.key_taken(tx, tenant_id, body.project_id, body.key):
            raise Conflict(f"the project already has a custom field with the key {body.key!r}", field="key")
        await _check_room(tx, tenant_id, body.project_id, 1)
        position = body.position
        if position is None:
            position = await field_store.next_position(tx, tenant_id, body.project_id)
        await field_store.insert_fields(tx, [{
            "id": draft.id, "tenant_id": tenant_id, "project_id": body.project_id, "key": body.key, "name": name,
            "type": body.type, "entity": body.entity, "options": _encoder.encode(options).decode(),
            "required": int(body.required), "default_value": default, "position": position, "retired_at": None,
            "created_at": now, "updated_at": now,
        }])
        await audit.record(tx, tenant_id, "custom_field.created", "custom_field", draft.id,
                           {"project_id": body.project_id, "key": body.key, "type": body.type,
                            "entity": body.entity})
        row = await field_store.get_field(tx, tenant_id, draft.id)
    assert row is not None
    return field_from_row(row)


async def update_field(db: Database, tenant_id: str, field_id: str, body: CustomFieldUpdate) -> CustomField:
    """Rename, change options, required, default or position; ``retired`` retires or brings back."""
    row = await field_store.get_field(db, tenant_id, field_id)
    if row is None:
        raise NotFound(f"custom field {field_id} not found")
    field = field_from_row(row)
    changes: dict[str, Any] = {}
    if body.name is not msgspec.UNSET:
        name = " ".join(body.name.split())
        if not name:
            raise InvalidInput("name must not be blank", field="name")
        changes["name"] = name
    if body.options is not msgspec.UNSET:
        # options taken away stay on the cases holding them (like a retired field's values)
        field.options = _clean_options(field.type, body.options)
        changes["options"] = _encoder.encode(field.options).decode()
    if body.required is not msgspec.UNSET:
        changes["required"] = int(body.required)
    if body.default is not msgspec.UNSET or "options" in changes:
        default = field.default if body.default is msgspec.UNSET else body.default
        users = await tenant_users(db, tenant_id) if field.type == "user" and default is not None else None
        changes["default_value"] = _clean_default(field, default, users)
    if body.position is not msgspec.UNSET:
        changes["position"] = body.position
    if body.retired is not msgspec.UNSET and body.retired != field.retired:
        changes["retired_at"] = now_iso() if body.retired else None
    async with db.transaction() as tx:
        current = await field_store.get_field(tx, tenant_id, field_id)
        if current is None:
            raise NotFound(f"custom field {field_id} not found")
        changes = {column: value for column, value in changes.items() if current[column] != value}
        if changes:
            changes["updated_at"] = now_iso()
            await field_store.update_field(tx, tenant_id, field_id, changes)
            diff = audit.changes_between(current, {**current, **changes},
                                         ("name", "options", "required", "default_value", "position", "retired_at"))
            await audit.record(tx, tenant_id, "custom_field.updated", "custom_field", field_id, diff)
        updated = await field_store.get_field(tx, tenant_id, field_id)
    assert updated is not None
    return field_from_row(updated)


async def retire_field(db: Database, tenant_id: str, field_id: str) -> None:
    """DELETE: the field is retired (hidden, no new values); the values cases hold are kept."""
    await update_field(db, tenant_id, field_id, CustomFieldUpdate(retired=True))


async def swap_position(db: Database, tenant_id: str, field_id: str, step: int) -> None:
    """Moves a field one place up (-1) or down (+1) among its project's fields (the settings page)."""
    async with db.transaction() as tx:
        row = await field_store.get_field(tx, tenant_id, field_id)
        if row is None:
            raise NotFound(f"custom field {field_id} not found")
        rows = await field_store.list_for_project(tx, tenant_id, row["project_id"], row["entity"])
        ids = [r["id"] for r in rows]
        index = ids.index(field_id)
        other = index + step
        if not 0 <= other < len(ids):
            return
        ids[index], ids[other] = ids[other], ids[index]
        now = now_iso()
        for position, (moved, old) in enumerate(zip(ids, rows, strict=True)):
            if old["id"] != moved or old["position"] != position:
                await field_store.update_field(tx, tenant_id, moved, {"position": position, "updated_at": now})
        await audit.record(tx, tenant_id, "custom_field.updated", "custom_field", field_id,
                           {"position": [index, other]})


async def create_missing(tx: Transaction, tenant_id: str, project_id: str, wanted: list[CustomField]) -> list[str]:
    """Creates the fields of ``wanted`` whose key the project lacks, and adds options a select lacks
    (the TestRail import: `custom_*` fields become fields as needed). Returns the keys created."""
    existing = {row["key"]: row for row in await field_store.list_for_project(tx, tenant_id, project_id)}
    now = now_iso()
    position = await field_store.next_position(tx, tenant_id, project_id)
    created, rows = [], []
    for field in wanted:
        old = existing.get(field.key)
        if old is None:
            rows.append({"id": new_id(), "tenant_id": tenant_id, "project_id": project_id, "key": field.key,
                         "name": field.name, "type": field.type, "entity": "case",
                         "options": _encoder.encode(field.options).decode(), "required": 0, "default_value": None,
                         "position": position, "retired_at": None, "created_at": now, "updated_at": now})
            position += 1
            created.append(field.key)
        elif old["type"] in CHOICES and field.options:
            options = _options.decode(old["options"])
            more = [option for option in field.options if option not in options]
            if more:
                await field_store.update_field(tx, tenant_id, old["id"], {
                    "options": _encoder.encode(options + more).decode(), "updated_at": now})
    if rows:
        await _check_room(tx, tenant_id, project_id, len(rows))
        await field_store.insert_fields(tx, rows)
    return created


# --------------------------------------------------------------------------------------------- filters


def _flag(text: str) -> str | None:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return "true"
    if lowered in ("false", "0", "no", "off"):
        return "false"
    return None


async def case_filters(db: Database, tenant_id: str, project_id: str | None,
                       raw: Mapping[str, list[str]]) -> list[tuple[str, list[str], list[str], list[float]]]:
    """`cf.<key>=value` filters as (key, projects, texts, numbers): a case of those projects matches when
    its field holds any of the values (a multiselect matches when one of its options is named). The key
    must be a case field of the project (without ``project_id``: of any project of the tenant, and the
    projects are those defining it): else a 400 naming ``cf.<key>``."""
    out = []
    project_fields = await fields_of(db, tenant_id, project_id) if project_id is not None and raw else {}
    for key, values in sorted(raw.items()):
        name = f"cf.{key}"
        if project_id is not None:
            fields = [project_fields[key]] if key in project_fields else []
        else:
            fields = [field_from_row(row) for row in await field_store.with_key(db, tenant_id, key, "case")]
        if not fields:
            raise InvalidInput(f"{name}: there is no custom field {key!r} for cases", field=name)
        kinds = {field.type for field in fields}
        texts: list[str] = []
        numbers: list[float] = []
        for value in values:
            if "number" in kinds:
                try:
                    number = float(value)
                except ValueError:
                    if kinds == {"number"}:
                        raise InvalidInput(f"{name}: {value[:40]!r} is not a number", field=name) from None
                else:
                    if math.isfinite(number):
                        numbers.append(number)
            if "checkbox" in kinds and (flag := _flag(value)) is not None:
                texts.append(flag)
            if kinds - {"number", "checkbox"}:
                texts.append(value.strip())
        projects = sorted({field.project_id for field in fields})
        out.append((key, projects, list(dict.fromkeys(texts)), list(dict.fromkeys(numbers))))
    return out


# --------------------------------------------------------------------------------------------- results


async def validate_result_fields(db: Database, tenant_id: str, project_id: str | None,
                                 given: Mapping[str, Any] | None, *, creating: bool = True,
                                 current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A result's ``custom_fields`` checked against the project's result fields (entity ``result``):
    types, options, users, defaults on create, required fields; a 400 naming ``custom_fields.<key>``.
    A result saved by hand (``PATCH /results/{id}``, the execution view) is checked with this."""
    fields = await fields_of(db, tenant_id, project_id, "result")
    users = await tenant_users(db, tenant_id) if needs_users(given) else None
    return merge_case_fields(fields, current or {}, given, creating=creating, users=users, entity="result")






async def result_rules(db: Database, tenant_id: str, project_id: str,
                       given: Iterable[Mapping[str, Any] | None]) -> ResultFieldRules:
    """The rules of a batch: one query for the project's result fields, one more for the tenant's users
    only when a `user` field exists and some item gives a value (``given``: each item's values)."""
    return await rules_of(db, tenant_id, await fields_of(db, tenant_id, project_id, "result"), given)


async def rules_of(db: Database, tenant_id: str, fields: dict[str, CustomField],
                   given: Iterable[Mapping[str, Any] | None]) -> ResultFieldRules:
    """``result_rules`` for result fields the caller has already read (``fields_of(..., "result")``)."""
    if not fields:
        return NO_RESULT_FIELDS
    users = None
    if any(field.type == "user" for field in fields.values()) and any(needs_users(values) for values in given):
        users = await tenant_users(db, tenant_id)
    defaults = {field.key: field.default for field in fields.values()
                if not field.retired and field.default is not None}
    return ResultFieldRules(fields, users, encode(defaults) if defaults else EMPTY)
