"""The plan of a case import: every row of a parsed file checked against the project's library, each one
a create, an update, unchanged or a rejection naming the row and the field, and the sections to create.

Nothing is written here (``tms.library.transfer.apply`` writes a plan); the import's rules and limits
are told in ``tms.library.transfer.service``.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tms.db import Database, Row, Transaction
from tms.errors import InvalidInput
from tms.library.cases import store as case_store
from tms.library.cases.models import CaseCreate
from tms.library.fields import service as field_service
from tms.library.fields import values as field_values
from tms.library.fields.models import CustomField
from tms.library.gherkin.batch import gherkin_errors
from tms.library.sections import store as section_store
from tms.library.sections.service import PATH_SEPARATOR, clean_name
from tms.library.transfer.csvfile import PARALLEL_GHERKIN_FROM, ImportRow, Parsed
from tms.library.transfer.export import section_paths

_encoder = msgspec.json.Encoder()
_fields_decoder = msgspec.json.Decoder(dict[str, Any])


@dataclass
class Plan:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    creates: list[tuple[ImportRow, CaseCreate]] = field(default_factory=list)
    updates: list[tuple[ImportRow, Row, dict[str, Any]]] = field(default_factory=list)
    new_sections: list[tuple[str, ...]] = field(default_factory=list)
    # what the plan was worked out from (the fields, the stored cases the file names, the sections):
    # the same read again under the write lock gives the same plan
    basis: tuple[Any, ...] = ()

    @property
    def rejected(self) -> int:
        return len(self.errors)


def _workers() -> int:
    """Worker processes for a big file's Gherkin checks: the cores beside the server's own, at most 4."""
    return min(4, multiprocessing.cpu_count() - 1)


async def _gherkin_errors(texts: list[str]) -> list[str | None]:
    """Checks many feature texts (~0.1 ms each on a quiet core); big batches in worker processes (the
    parser is pure Python) when there are at least 3 cores to spare. A spawned worker takes ~0.3 s to
    start: on the 2-core VM, 10,000 texts took 8.7-9.5 s in 4 workers and 5.1-6.5 s in one thread
    (load average 14, bench/custom_fields.py)."""
    workers = _workers()
    if len(texts) < PARALLEL_GHERKIN_FROM or workers < 3:
        return await asyncio.to_thread(gherkin_errors, texts)
    size = -(-len(texts) // workers)
    chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = await asyncio.gather(*(loop.run_in_executor(pool, gherkin_errors, c) for c in chunks))
    return [error for part in parts for error in part]


def _convert(row: ImportRow) -> CaseCreate | str:
    data = {k: v for k, v in row.fields.items() if not k.startswith("_")}
    try:
        body = msgspec.convert(data, CaseCreate)
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = re.search(r"at `\$\.([A-Za-z_]+)", message)
        field_name = match.group(1) if match else "row"
        return f"{field_name}: {message.split(' - at ')[0]}"
    if not body.title.strip():
        return "title: must not be blank"
    return body


def _check_row(row: ImportRow) -> CaseCreate | str:
    """The row as a CaseCreate, or the message naming what is wrong (Gherkin is checked apart)."""
    body = _convert(row)
    if isinstance(body, str):
        return body
    try:
        for name in row.section:
            clean_name(name)
    except InvalidInput as exc:
        return f"section: {exc.detail}"
    return body


@dataclass(frozen=True)
class FieldRules:
    """What the custom field values of an import are checked against: the project's case fields (with
    those the file will create) and, for `user` fields, the tenant's users."""

    fields: dict[str, CustomField]
    users: field_values.Users | None
    given: bool  # the file has custom field columns: required fields are checked on updates too


async def _field_rules(db: Database | Transaction, tenant_id: str, project_id: str, parsed: Parsed,
                       users: field_values.Users | None) -> FieldRules:
    """400 naming ``file`` for a `cf:` column the project does not define for cases."""
    fields = field_values.with_inferred(await field_service.fields_of(db, tenant_id, project_id), parsed.inferred)
    unknown = [key for key in parsed.field_keys if key not in fields]
    if unknown:
        raise InvalidInput(f"the project has no custom field for cases named {', '.join(unknown)} (columns "
                           f"{', '.join('cf:' + key for key in unknown)}); define it first or leave the column out",
                           field="file")
    return FieldRules(fields, users, bool(parsed.field_keys))


def _row_fields(row: ImportRow, rules: FieldRules, current: dict[str, Any] | None) -> dict[str, Any] | str:
    """The row's custom field values merged into ``current`` (None: a new case, defaults added), or the
    message naming what is wrong (``cf:<key>: …``)."""
    cells: dict[str, str] = row.fields.get("_cf", {})
    given: dict[str, Any] = {}
    try:
        for key, cell in cells.items():
            given[key] = field_values.value_from_cell(rules.fields[key], cell)
        return field_values.merge_case_fields(rules.fields, current or {}, given if rules.given else None,
                                               creating=current is None, users=rules.users)
    except ValueError as exc:
        return f"cf:{key}: {exc}"
    except InvalidInput as exc:
        name = (exc.field or "").removeprefix("custom_fields.")
        return f"cf:{name}: {exc.detail.split(': ', 1)[-1]}"


async def plan_import(db: Database | Transaction, tenant_id: str, project_id: str, parsed: Parsed,
                      checked: dict[str, str | None] | None = None,
                      users: field_values.Users | None = None, earlier: Plan | None = None) -> Plan:
    """What the import will do, row by row, without writing anything.

    ``checked`` remembers the Gherkin verdict of each text (filled here): planning again inside the
    write transaction, after a first plan outside it, then parses no text a second time; and when what
    the ``earlier`` plan was worked out from reads the same, that plan is the answer (no second
    comparison of every row). ``users`` (``field_service.tenant_users``) is needed when the file gives
    values to `user` fields.
    """
    checked = {} if checked is None else checked
    rules = await _field_rules(db, tenant_id, project_id, parsed, users)
    plan = Plan()
    # the CPU parts (a check of each row, the comparison, the sections) run in worker threads
    candidates = await asyncio.to_thread(_candidates, parsed, plan)
    existing = {r["code"]: r for r in await case_store.rows_by_codes(
        db, tenant_id, [b.code for _, b in candidates if b.code is not None])}
    sections = await section_store.list_for_project(db, tenant_id, project_id)
    plan.basis = (rules.fields, existing, sections)
    if earlier is not None and earlier.basis == plan.basis:
        return earlier
    # only texts that differ from the stored case need the parser (a re-import skips most of them)
    to_check = [(row, body) for row, body in candidates
                if body.code not in existing or existing[body.code]["bdd_content"] != body.bdd_content]
    unchecked = list(dict.fromkeys(body.bdd_content for _, body in to_check if body.bdd_content not in checked))
    checked.update(zip(unchecked, await _gherkin_errors(unchecked), strict=True))
    bad = {id(row): error for row, body in to_check if (error := checked[body.bdd_content])}
    await asyncio.to_thread(_compare, plan, parsed, candidates, existing, bad, sections, rules)
    return plan


def _candidates(parsed: Parsed, plan: Plan) -> list[tuple[ImportRow, CaseCreate]]:
    """The rows that can become cases (each checked once); the others go to ``plan.errors``."""
    candidates: list[tuple[ImportRow, CaseCreate]] = []
    seen: dict[str, int] = {}
    for row in parsed.rows:
        if row.error:
            plan.errors.append((row.row, row.error))
            continue
        if row.checked is None:
            row.checked = _check_row(row)
        body = row.checked
        if isinstance(body, str):
            plan.errors.append((row.row, body))
            continue
        if body.code is not None:
            if body.code in seen:
                plan.errors.append((row.row, f"code: {body.code} already appears on row {seen[body.code]}"))
                continue
            seen[body.code] = row.row
        candidates.append((row, body))
    return candidates


def _compare(plan: Plan, parsed: Parsed, candidates: list[tuple[ImportRow, CaseCreate]], existing: dict[str, Row],
             bad: dict[int, str], sections: list[Row], rules: FieldRules) -> None:
    """Each candidate against the stored case (create, update, unchanged) and the sections to create:
    linear, with sets and dicts (each missing section path found once, parents first)."""
    by_path = {tuple(p.split(PATH_SEPARATOR)): sid for sid, p in section_paths(sections).items()}
    wanted = dict.fromkeys(parsed.sections)
    for row, body in candidates:
        if id(row) in bad:
            plan.errors.append((row.row, bad[id(row)]))
            continue
        wanted[row.section] = None
        old = existing.get(body.code) if body.code else None
        values = _row_fields(row, rules, None if old is None else _fields_decoder.decode(old["custom_fields"]))
        if isinstance(values, str):
            plan.errors.append((row.row, values))
            continue
        if old is None:
            body.custom_fields = values
            plan.creates.append((row, body))
            continue
        new = _stored_values(row, body)
        new["custom_fields"] = field_values.encode(values)
        changes = {k: v for k, v in new.items() if old[k] != v}
        if "section_id" in changes and changes["section_id"] == ("path", row.section):
            current = by_path.get(row.section) if row.section else None
            if current == old["section_id"] and (current is not None or not row.section):
                changes.pop("section_id")
        if changes:
            plan.updates.append((row, old, changes))
        else:
            plan.unchanged += 1
    known: set[tuple[str, ...]] = set(by_path)
    for path in wanted:
        missing = []
        prefix = path
        while prefix and prefix not in known:
            missing.append(prefix)
            known.add(prefix)
            prefix = prefix[:-1]
        plan.new_sections += reversed(missing)  # parents first
    plan.errors.sort()
    plan.created, plan.updated = len(plan.creates), len(plan.updates)


def _stored_values(row: ImportRow, body: CaseCreate) -> dict[str, Any]:
    """The row's values the way test_cases stores them; a column the file lacks keeps the old value."""
    given = row.fields
    new: dict[str, Any] = {"title": body.title.strip(), "bdd_content": body.bdd_content}
    for key in ("status", "priority", "automation_status"):
        if key in given:
            new[key] = getattr(body, key)
    if "layer" in given:
        new["layer"] = body.layer
    if "is_e2e" in given:
        new["is_e2e"] = int(body.is_e2e)
    if "tags" in given:
        new["tags"] = _encoder.encode(list(dict.fromkeys(t.strip() for t in body.tags if t.strip()))).decode()
    if "tickets" in given:
        new["tickets"] = _encoder.encode(body.tickets).decode()
    if not given.get("_keep_section"):
        new["section_id"] = ("path", row.section)
    return new
