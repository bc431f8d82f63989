"""Import and export of a project's cases: CSV both ways, and TestRail's XML export in.

An import is planned first (every row checked, each one a create, an update, unchanged or a
rejection with the row and field named) and then applied in ONE transaction: sections named by
path are created as needed, new cases inserted, changed ones updated with a new version, and one
audit entry records the counts. The preview (``dry_run``) is the same plan without the write, so
what it shows is what the import does. A file-level problem (wrong header, not UTF-8, an XML bomb,
too large) is a 400/413 and changes nothing.

Limits (issue 22): a file names at most ``MAX_SECTIONS`` sections (each parent counted once), nested at
most ``MAX_SECTION_DEPTH`` deep; a TestRail file nests elements at most ``MAX_XML_DEPTH`` deep. Past
them the file is a 400 naming the limit, found while parsing (linear), before any planning. Parsing
and planning run in worker threads (``asyncio.to_thread``), never on the event loop.

Exported cells that a spreadsheet would run as a formula (OWASP "CSV injection": a first character
``= + - @``, tab or CR) start with a single quote ``'``; so does a cell starting with ``'`` followed by
such a character or another ``'``. The import takes exactly that one quote off again (``restore``), so
an export imports back unchanged, a value that really starts with ``'=`` included.

NUL (U+0000) cannot be stored: in a CSV's free text (``bdd_content``) it becomes U+FFFD, in any other
column it rejects the row naming the column.

The CSV columns are the contract's: ``code, title, section, status, priority, layer, is_e2e,
automation_status, tags, tickets, bdd_content``, then a ``cf:<key>`` column per active custom field of
the project (issue 26); a CSV exported here imports back unchanged. TestRail's custom fields (the
children of ``<custom>`` that are not steps, a ``custom_`` prefix dropped) become the project's custom
fields, created as needed: a dropdown (``<value>``) a select with the values met as options, several
``<value>`` a multiselect, other text a text field (a textarea when it has several lines).
"""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import multiprocessing
import re
from collections.abc import AsyncIterator, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import msgspec
from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException

from tms.db import Database, Row, Transaction
from tms.errors import NUL, NUL_MESSAGE, NUL_REPLACEMENT, InvalidInput, NotFound, TooLarge
from tms.ids import new_ids, now_iso
from tms.library.cases import service as case_service
from tms.library.cases import store as case_store
from tms.library.cases.models import CaseCreate, Ticket
from tms.library.fields import service as field_service
from tms.library.fields.models import CustomField
from tms.library.gherkin.batch import gherkin_errors
from tms.library.projects import store as project_store
from tms.library.sections import store as section_store
from tms.library.sections.service import PATH_SEPARATOR, clean_name
from tms.team.audit import service as audit

COLUMNS = ("code", "title", "section", "status", "priority", "layer", "is_e2e", "automation_status", "tags",
           "tickets", "bdd_content")
REQUIRED_COLUMNS = ("title", "bdd_content")
# a custom field's column: "cf:" and the field's key
FIELD_COLUMN = re.compile(r"^cf:[a-z0-9_]{1,50}$")
FORMATS = ("csv", "testrail-xml")
# An import file is read whole (it is checked whole before anything is written); 20 MB holds about
# 40,000 typical cases. Larger files are refused with 413 before they are parsed.
MAX_IMPORT_BYTES = 20 * 1024 * 1024
EXPORT_BATCH = 1000
# Gherkin checks cost ~0.3 ms a case in the official parser; big files are checked in worker processes.
PARALLEL_GHERKIN_FROM = 3000
# sections one import may name (every distinct path, each parent counted once) and how deep they nest
MAX_SECTIONS = 10_000
MAX_SECTION_DEPTH = 50
# elements inside each other in a TestRail file: two per section level, plus a case's own markup
MAX_XML_DEPTH = 2 * MAX_SECTION_DEPTH + 28
# the longest TestRail case id taken as a code (C-<digits>); a 5,000-digit id is not an export's
MAX_CASE_ID_DIGITS = 18

_encoder = msgspec.json.Encoder()
_tags_decoder = msgspec.json.Decoder(list[str])
_tickets_decoder = msgspec.json.Decoder(list[Ticket])
TRUE = {"true", "1", "yes", "y"}
FALSE = {"false", "0", "no", "n", ""}
_JIRA_KEY = re.compile(r"^[A-Z][A-Z0-9]+-\d+$")
# OWASP CSV injection: first characters a spreadsheet reads as the start of a formula
_FORMULA_FIRST = frozenset("=+-@\t\r")
_QUOTED_NEXT = _FORMULA_FIRST | {"'"}


def neutralise(value: str) -> str:
    """A cell as exported: a leading ``'`` when a spreadsheet would run it as a formula (or when it
    already starts with the quote ``restore`` takes off), so ``restore(neutralise(v)) == v``."""
    first = value[:1]
    if first in _FORMULA_FIRST or (first == "'" and value[1:2] in _QUOTED_NEXT):
        return "'" + value
    return value


def restore(value: str) -> str:
    """A cell as imported: the quote ``neutralise`` added taken off (a lone ``'x`` stays as it is)."""
    if value[:1] == "'" and value[1:2] in _QUOTED_NEXT:
        return value[1:]
    return value


# ----------------------------------------------------------------------------------------------- export


def section_paths(rows: list[Row]) -> dict[str, str]:
    """{section id: "Parent / Child"} for every section of a project (rows ordered by ``path``, so a
    parent comes before its children): each path is its parent's plus one name, one pass."""
    out: dict[str, str] = {}
    for row in rows:
        parent = out.get(row["parent_id"]) if row["parent_id"] else None
        out[row["id"]] = f"{parent}{PATH_SEPARATOR}{row['name']}" if parent else row["name"]
    return out


def _csv_line(values: Iterable[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(list(values))
    return buffer.getvalue()


@dataclass(frozen=True)
class FieldColumns:
    """The `cf:<key>` columns of an export: the project's active case fields, users as e-mails."""

    fields: list[CustomField]
    emails: dict[str, str]


_fields_decoder = msgspec.json.Decoder(dict[str, Any])


def _csv_lines(rows: list[Row], paths: dict[str, str], columns: FieldColumns) -> bytes:
    """A batch of cases as CSV lines: one writer per batch, not one per row."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(_export_row(row, paths, columns) for row in rows)
    return buffer.getvalue().encode()


def _export_row(row: Row, paths: dict[str, str], columns: FieldColumns) -> list[str]:
    tags = _tags_decoder.decode(row["tags"])
    tickets = _tickets_decoder.decode(row["tickets"])
    values = _fields_decoder.decode(row["custom_fields"]) if columns.fields else {}
    return [neutralise(value) for value in (
        row["code"], row["title"], paths.get(row["section_id"] or "", ""), row["status"], row["priority"],
        row["layer"] or "", "true" if row["is_e2e"] else "false", row["automation_status"], ";".join(tags),
        ";".join(f"{t.source}:{t.key}" for t in tickets), row["bdd_content"],
        *(field_service.cell_of(field, values.get(field.key), columns.emails) for field in columns.fields),
    )]


async def check_project(db: Database | Transaction, tenant_id: str, project_id: str | None) -> None:
    if not project_id:
        raise InvalidInput("project_id is required", field="project_id")
    if not await project_store.project_exists(db, tenant_id, project_id):
        raise NotFound(f"project {project_id} not found", field="project_id")


async def export_csv(
    db: Database, tenant_id: str, project_id: str, query: case_service.CaseQuery | None = None
) -> AsyncIterator[bytes]:
    """The project's cases (or those matching ``query``) as CSV, produced batch by batch: memory stays
    the same whatever the size of the library. The caller checks the project first."""
    paths = section_paths(await section_store.list_for_project(db, tenant_id, project_id))
    fields = [f for f in (await field_service.fields_of(db, tenant_id, project_id)).values() if not f.retired]
    emails = {}
    if any(field.type == "user" for field in fields):
        emails = field_service.user_emails(await field_service.tenant_users(db, tenant_id))
    columns = FieldColumns(fields, emails)
    yield _csv_line([*COLUMNS, *(f"cf:{field.key}" for field in fields)]).encode()
    if query is not None:
        ids = await case_service.matching_ids(db, tenant_id, query)
        for start in range(0, len(ids), EXPORT_BATCH):
            rows = await case_store.rows_by_ids(db, tenant_id, ids[start : start + EXPORT_BATCH])
            yield _csv_lines(rows, paths, columns)
        return
    after = 0
    while True:
        rows = await case_store.iter_project_cases(db, tenant_id, project_id, after, EXPORT_BATCH)
        if not rows:
            return
        after = rows[-1]["_rowid"]
        yield _csv_lines(rows, paths, columns)


# ----------------------------------------------------------------------------------------------- parsing


@dataclass
class ImportRow:
    """One case of the file, as the file says it; ``row`` numbers it for error messages."""

    row: int
    fields: dict[str, Any]
    section: tuple[str, ...] = ()
    error: str | None = None
    # the row as a CaseCreate, or what is wrong with it: worked out by the first plan, kept for a second
    checked: CaseCreate | str | None = None


@dataclass
class Parsed:
    rows: list[ImportRow]
    # sections the file declares (TestRail exports sections even when empty): path -> description
    sections: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    # custom field keys the file gives values for (its cf: columns, TestRail's custom fields)
    field_keys: list[str] = field(default_factory=list)
    # fields a TestRail file brings that the project may lack: created as needed by the import
    inferred: dict[str, CustomField] = field(default_factory=dict)


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")  # a BOM (Excel writes one) is not part of the header
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the file is not UTF-8 text (invalid byte at offset {exc.start})", field="file") from None


def _split_path(text: str) -> tuple[str, ...]:
    if not text.strip():
        return ()
    parts = [" ".join(p.split()) for p in text.split(PATH_SEPARATOR.strip())]
    if any(not p for p in parts):
        raise ValueError(f'section: {text!r} has an empty part (write "Parent / Child")')
    return tuple(parts)


def _tickets(text: str) -> list[dict[str, str]]:
    tickets = []
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        source, sep, key = item.partition(":")
        if not sep:
            source, key = "OTHER", item
        source = source.strip().upper()
        if source not in ("JIRA", "GITHUB", "GITLAB", "LINEAR", "OTHER"):
            raise ValueError(
                f"tickets: {item!r} has an unknown source {source!r} (write SOURCE:KEY, e.g. JIRA:SHOP-12)")
        tickets.append({"source": source, "key": key.strip()})
    return tickets


def parse_csv(data: bytes) -> Parsed:
    text = _text(data)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise InvalidInput("the file is empty: the first line must name the columns", field="file") from None
    except csv.Error as exc:
        raise InvalidInput(f"row 1: {exc}", field="file") from None
    names = [h.strip().lower() for h in header]
    if len(names) == 1 and ";" in names[0]:
        raise InvalidInput(
            "the header has one column holding ';': separate columns with commas (';' separates tags and "
            f"tickets inside a column). Expected: {', '.join(COLUMNS)}", field="file")
    unknown = [n for n in names if n not in COLUMNS and not FIELD_COLUMN.match(n)]
    missing = [n for n in REQUIRED_COLUMNS if n not in names]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if unknown or missing or repeated:
        problems = []
        if unknown:
            problems.append(f"unknown column(s) {', '.join(repr(n) for n in unknown)}")
        if missing:
            problems.append(f"missing column(s) {', '.join(missing)}")
        if repeated:
            problems.append(f"repeated column(s) {', '.join(repeated)}")
        raise InvalidInput(f"wrong CSV header: {'; '.join(problems)}. Expected: {', '.join(COLUMNS)} "
                           "(and cf:<key> for custom fields)", field="file")
    rows: list[ImportRow] = []
    number = 1
    has_nul = NUL in text
    try:
        for values in reader:
            number += 1
            if not any(v.strip() for v in values):
                continue  # blank lines are not cases
            if len(values) != len(names):
                rows.append(ImportRow(number, {}, error=f"has {len(values)} columns, the header {len(names)}"))
                continue
            # the quote the export puts before a formula-like cell comes off (free text is not stripped)
            record = {name: restore(value if name == "bdd_content" else value.strip())
                      for name, value in zip(names, values, strict=True)}
            if has_nul and (bad := _nul_column(record)):
                rows.append(ImportRow(number, {}, error=f"{bad}: {NUL_MESSAGE}"))
                continue
            row = _csv_row(number, record)
            if len(row.section) > MAX_SECTION_DEPTH:
                raise InvalidInput(f"row {number}: section is {len(row.section)} levels deep; an import takes "
                                   f"at most {MAX_SECTION_DEPTH} levels", field="file")
            rows.append(row)
    except csv.Error as exc:
        raise InvalidInput(f"row {number}: {exc}", field="file") from None
    parsed = Parsed(rows, field_keys=[name[3:] for name in names if name.startswith("cf:")])
    check_section_count(parsed)
    return parsed


def _nul_column(record: dict[str, str]) -> str | None:
    """The first column holding NUL that cannot take U+FFFD instead (free text does: replaced here)."""
    for name, value in record.items():
        if NUL in value:
            if name != "bdd_content":
                return name
            record[name] = value.replace(NUL, NUL_REPLACEMENT)
    return None


def check_section_count(parsed: Parsed) -> None:
    """400 when the file names more than MAX_SECTIONS sections, counting each parent once. Each
    path's prefixes are walked from the longest until one is known: linear in the sections named."""
    known: set[tuple[str, ...]] = set()
    paths = itertools.chain(parsed.sections, (row.section for row in parsed.rows))
    for path in paths:
        prefix = path
        while prefix and prefix not in known:
            known.add(prefix)
            prefix = prefix[:-1]
        if len(known) > MAX_SECTIONS:
            raise InvalidInput(f"the file names more than {MAX_SECTIONS:,} sections; an import takes at most "
                               f"{MAX_SECTIONS:,} (split the file)", field="file")


def _csv_row(number: int, record: dict[str, str]) -> ImportRow:
    fields: dict[str, Any] = {"title": record.get("title", ""),
                              "bdd_content": record.get("bdd_content", "").replace("\r\n", "\n")}
    try:
        if record.get("code", "").strip():
            fields["code"] = record["code"].strip()
        for key in ("status", "priority", "automation_status"):
            if record.get(key, "").strip():
                fields[key] = record[key].strip().upper()
        if "layer" in record:
            fields["layer"] = record["layer"].strip().upper() or None
        if "is_e2e" in record:
            flag = record["is_e2e"].strip().lower()
            if flag not in TRUE | FALSE:
                raise ValueError(f"is_e2e: {record['is_e2e']!r} is not true or false")
            fields["is_e2e"] = flag in TRUE
        if "tags" in record:
            fields["tags"] = [t.strip() for t in record["tags"].split(";") if t.strip()]
        if "tickets" in record:
            fields["tickets"] = _tickets(record["tickets"])
        section = _split_path(record.get("section", "")) if "section" in record else None
    except ValueError as exc:
        return ImportRow(number, fields, error=str(exc))
    custom = {name[3:]: value for name, value in record.items() if name.startswith("cf:")}
    if custom:
        fields["_cf"] = custom
    row = ImportRow(number, fields, section or ())
    if section is None:
        row.fields["_keep_section"] = True
    return row


# TestRail ----------------------------------------------------------------------------------------------

_TR_PRIORITY = {"low": "LOW", "medium": "MEDIUM", "high": "HIGH", "critical": "CRITICAL", "1": "LOW",
                "2": "MEDIUM", "3": "HIGH", "4": "CRITICAL"}
# custom fields mapped to steps or BDD; every other custom field is kept in the feature's description
_TR_STEP_FIELDS = {"steps_separated", "steps", "expected", "preconds", "testrail_bdd_scenario", "automation_type"}


def _child_text(element: Any, name: str) -> str:
    child = element.find(name)
    if child is None:
        return ""
    return "".join(child.itertext()).strip()


def _value_of(element: Any) -> str:
    """A custom field as text: its ``<value>`` when it has one (dropdowns), else all its text."""
    value = element.find("value")
    if value is not None:
        return "".join(value.itertext()).strip()
    return "\n".join(t.strip() for t in element.itertext() if t.strip())


def _free_lines(text: str) -> list[str]:
    """Free text kept inside a feature's description: each line quoted so no line reads as Gherkin."""
    return [f"  > {line.strip()}" for line in text.splitlines() if line.strip()]


def _step_lines(keyword: str, text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [f"    {keyword if i == 0 else 'And'} {line}" for i, line in enumerate(lines)]


def _testrail_gherkin(title: str, steps: list[tuple[str, str]], preconds: str, bdd: str,
                      notes: list[tuple[str, str]]) -> str:
    description: list[str] = []
    for name, value in notes:
        first, *rest = value.splitlines() or [""]
        description.append(f"  > {name}: {first.strip()}")
        description += _free_lines("\n".join(rest))
    if bdd.strip():
        if bdd.lstrip().lower().startswith("feature:"):
            if not description:
                return bdd.strip() + "\n"
            head, _, feature_body = bdd.strip().partition("\n")
            return "\n".join([head, *description, feature_body]) + "\n"
        lines = [f"Feature: {title}", *description, ""]
        lines += [f"  {line.rstrip()}" if line.strip() else "" for line in bdd.strip().splitlines()]
        return "\n".join(lines) + "\n"
    lines = [f"Feature: {title}", *description, "", f"  Scenario: {title}"]
    body = _step_lines("Given", preconds)
    for content, expected in steps:
        body += _step_lines("When", content)
        body += _step_lines("Then", expected)
    if not body:
        body = ["    Given the steps were not written in TestRail"]
    return "\n".join(lines + body) + "\n"


@dataclass
class _Seen:
    """What a TestRail custom field looked like across the file: the kinds of value and the options."""

    name: str
    kinds: set[str] = field(default_factory=set)
    options: list[str] = field(default_factory=list)

    def draft(self, key: str) -> CustomField:
        if self.kinds <= {"select", "multiselect"}:
            kind = "multiselect" if "multiselect" in self.kinds else "select"
            return field_service.draft_field(key, self.name, kind, self.options[:200])
        return field_service.draft_field(key, self.name, "textarea" if "textarea" in self.kinds else "text", [])


def _field_key(tag: str) -> str:
    """TestRail's system name of a custom field (``custom_browser`` or, in the XML, ``browser``) as a key."""
    name = tag.lower().removeprefix("custom_")
    return re.sub(r"[^a-z0-9_]", "_", name)[:50].strip("_")


def _custom_value(child: Any, key: str, seen: dict[str, _Seen]) -> str:
    """A custom field's value as a CSV cell would hold it, noting its kind (and options) in ``seen``."""
    info = seen.setdefault(key, _Seen(child.tag.removeprefix("custom_").replace("_", " ").strip().capitalize()))
    values = [" ".join("".join(v.itertext()).split()).replace(field_service.OPTION_SEPARATOR, ",")
              for v in child.findall("value")]
    values = [v[:200] for v in values if v]
    if values:
        info.kinds.add("multiselect" if len(values) > 1 else "select")
        info.options += [v for v in values if v not in info.options]
        return field_service.OPTION_SEPARATOR.join(values)
    text = "\n".join(t.strip() for t in child.itertext() if t.strip())
    info.kinds.add("textarea" if "\n" in text else "text")
    return text


def _testrail_case(number: int, element: Any, section: tuple[str, ...],
                   seen: dict[str, _Seen] | None = None) -> ImportRow:
    title = " ".join(_child_text(element, "title").split())
    fields: dict[str, Any] = {"title": title}
    case_id = _child_text(element, "id")
    digits = re.sub(r"\D", "", case_id)
    if digits:
        number_part = digits.lstrip("0") or "0"
        if len(number_part) > MAX_CASE_ID_DIGITS:
            raise InvalidInput(f"case {number}: its id {case_id[:24]!r}… has {len(number_part):,} digits; a TestRail "
                               f"case id has at most {MAX_CASE_ID_DIGITS}", field="file")
        fields["code"] = f"C-{number_part}"
    notes: list[tuple[str, str]] = []
    priority = _child_text(element, "priority")
    if priority:
        mapped = _TR_PRIORITY.get(priority.strip().lower())
        if mapped:
            fields["priority"] = mapped
        else:
            notes.append(("priority", priority))
    kind = _child_text(element, "type")
    tags = []
    if kind:
        tags.append(re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-") or kind)
    fields["tags"] = [t for t in tags if t]
    refs = _child_text(element, "references")
    tickets = []
    for ref in re.split(r"[,\s]+", refs):
        if ref:
            tickets.append({"source": "JIRA" if _JIRA_KEY.match(ref) else "OTHER", "key": ref[:100]})
    fields["tickets"] = tickets
    for name in ("template", "estimate", "milestone", "refs"):
        value = _child_text(element, name)
        if value and name != "template":
            notes.append((name, value))
    steps: list[tuple[str, str]] = []
    preconds = bdd = ""
    custom = element.find("custom")
    if custom is not None:
        for child in custom:
            tag = child.tag
            if tag == "steps_separated":
                for step in child.findall("step"):
                    steps.append((_child_text(step, "content"), _child_text(step, "expected")))
            elif tag == "steps":
                steps.append(("".join(child.itertext()).strip(), _child_text(custom, "expected")))
            elif tag == "preconds":
                preconds = "".join(child.itertext()).strip()
            elif tag == "testrail_bdd_scenario":
                bdd = "\n".join(t.strip("\n") for t in child.itertext() if t.strip())
            elif tag == "automation_type":
                value = _value_of(child)
                fields["automation_status"] = "AUTOMATED" if "automat" in value.lower() else "MANUAL"
                if value.lower() not in ("none", "", "automated", "manual"):
                    notes.append(("automation_type", value))
            elif tag not in _TR_STEP_FIELDS:
                key = _field_key(tag)
                if seen is None or not key:
                    value = _value_of(child)
                    if value:
                        notes.append((tag, value))
                    continue
                # a custom field of TestRail becomes one of the project's (created as needed)
                fields.setdefault("_cf", {})[key] = _custom_value(child, key, seen)
    fields["bdd_content"] = _testrail_gherkin(title or "Untitled", steps, preconds, bdd, notes)
    return ImportRow(number, fields, section)


def _read_xml(data: bytes) -> Any:
    """The document's root, built while counting how deep elements (and sections) nest: a file past
    MAX_XML_DEPTH or MAX_SECTION_DEPTH is a 400 before anything recursive (``itertext``) sees it."""
    depth = sections = 0
    try:
        events = SafeET.iterparse(io.BytesIO(data), events=("start", "end"), forbid_dtd=True)
        for event, element in events:
            if event == "start":
                depth += 1
                if depth > MAX_XML_DEPTH:
                    raise InvalidInput(f"the XML nests elements more than {MAX_XML_DEPTH} deep; a TestRail export "
                                       f"nests sections at most {MAX_SECTION_DEPTH} levels here", field="file")
                if element.tag == "section":
                    sections += 1
                    if sections > MAX_SECTION_DEPTH:
                        raise InvalidInput(f"the file nests sections more than {MAX_SECTION_DEPTH} levels deep; an "
                                           f"import takes at most {MAX_SECTION_DEPTH} levels", field="file")
            else:
                depth -= 1
                sections -= element.tag == "section"
        return events.root  # set by iterparse once the whole document is read
    except DefusedXmlException as exc:
        raise InvalidInput(f"the XML file is refused: {type(exc).__name__} (DTDs and entities are not allowed)",
                           field="file") from None
    except SafeET.ParseError as exc:
        raise InvalidInput(f"the file is not well-formed XML: {exc}", field="file") from None


def parse_testrail(data: bytes) -> Parsed:
    """TestRail's XML export (``<suite><sections><section>…<cases><case>``) as rows and sections.

    Parsed with defusedxml: DTDs, entity expansion (billion laughs) and external entities are refused.
    The section tree is walked with a stack (no recursion), depth first, in file order.
    """
    root = _read_xml(data)
    if root.tag not in ("suite", "sections"):
        raise InvalidInput(f"not a TestRail export: the root element is <{root.tag}>, expected <suite>", field="file")
    parsed = Parsed([])
    seen: dict[str, _Seen] = {}
    counter = 0
    top = root.find("sections") if root.tag == "suite" else root
    stack: list[tuple[Any, tuple[str, ...]]] = []
    if top is not None:
        stack += ((section, ()) for section in reversed(top.findall("section")))
    while stack:
        section, prefix = stack.pop()
        name = " ".join(_child_text(section, "name").replace(" / ", "/").split()) or "Untitled section"
        path = (*prefix, name)
        description = _child_text(section, "description") or None
        parsed.sections.setdefault(path, description)
        cases = section.find("cases")
        for case in [] if cases is None else cases.findall("case"):
            counter += 1
            parsed.rows.append(_testrail_case(counter, case, path, seen))
        children = section.find("sections")
        if children is not None:
            stack.extend((child, path) for child in reversed(children.findall("section")))
    parsed.inferred = {key: info.draft(key) for key, info in seen.items()}
    parsed.field_keys = list(seen)
    check_section_count(parsed)
    return parsed


# ----------------------------------------------------------------------------------------------- planning


@dataclass
class Plan:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    creates: list[tuple[ImportRow, CaseCreate]] = field(default_factory=list)
    updates: list[tuple[ImportRow, Row, dict[str, Any]]] = field(default_factory=list)
    new_sections: list[tuple[str, ...]] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return len(self.errors)


async def _gherkin_errors(texts: list[str]) -> list[str | None]:
    """Checks many feature texts; big batches in worker processes (the parser is pure Python)."""
    if len(texts) < PARALLEL_GHERKIN_FROM:
        return await asyncio.to_thread(gherkin_errors, texts)
    workers = max(2, min(4, multiprocessing.cpu_count()))
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
    users: field_service.Users | None
    given: bool  # the file has custom field columns: required fields are checked on updates too


async def _field_rules(db: Database | Transaction, tenant_id: str, project_id: str, parsed: Parsed,
                       users: field_service.Users | None) -> FieldRules:
    """400 naming ``file`` for a `cf:` column the project does not define for cases."""
    fields = field_service.with_inferred(await field_service.fields_of(db, tenant_id, project_id), parsed.inferred)
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
            given[key] = field_service.value_from_cell(rules.fields[key], cell)
        return field_service.merge_case_fields(rules.fields, current or {}, given if rules.given else None,
                                               creating=current is None, users=rules.users)
    except ValueError as exc:
        return f"cf:{key}: {exc}"
    except InvalidInput as exc:
        name = (exc.field or "").removeprefix("custom_fields.")
        return f"cf:{name}: {exc.detail.split(': ', 1)[-1]}"


async def plan_import(db: Database | Transaction, tenant_id: str, project_id: str, parsed: Parsed,
                      checked: dict[str, str | None] | None = None,
                      users: field_service.Users | None = None) -> Plan:
    """What the import will do, row by row, without writing anything.

    ``checked`` remembers the Gherkin verdict of each text (filled here): planning again inside the
    write transaction, after a first plan outside it, then parses no text a second time. ``users``
    (``field_service.tenant_users``) is needed when the file gives values to `user` fields.
    """
    checked = {} if checked is None else checked
    rules = await _field_rules(db, tenant_id, project_id, parsed, users)
    plan = Plan()
    # the CPU parts (a check of each row, the comparison, the sections) run in worker threads
    candidates = await asyncio.to_thread(_candidates, parsed, plan)
    existing = {r["code"]: r for r in await case_store.rows_by_codes(
        db, tenant_id, [b.code for _, b in candidates if b.code is not None])}
    # only texts that differ from the stored case need the parser (a re-import skips most of them)
    to_check = [(row, body) for row, body in candidates
                if body.code not in existing or existing[body.code]["bdd_content"] != body.bdd_content]
    unchecked = list(dict.fromkeys(body.bdd_content for _, body in to_check if body.bdd_content not in checked))
    checked.update(zip(unchecked, await _gherkin_errors(unchecked), strict=True))
    bad = {id(row): error for row, body in to_check if (error := checked[body.bdd_content])}
    sections = await section_store.list_for_project(db, tenant_id, project_id)
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
        new["custom_fields"] = field_service.encode(values)
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


# ----------------------------------------------------------------------------------------------- applying


@dataclass(frozen=True)
class ImportResult:
    created: int
    updated: int
    unchanged: int
    rejected: int
    errors: list[tuple[int, str]]
    sections_created: int


def parse(data: bytes, fmt: str) -> Parsed:
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}", field="format")
    if len(data) > MAX_IMPORT_BYTES:
        raise TooLarge(f"the file is {len(data)} bytes; an import takes at most {MAX_IMPORT_BYTES} bytes "
                       "(split it into several files)", field="file")
    return parse_csv(data) if fmt == "csv" else parse_testrail(data)


async def import_cases(
    db: Database, tenant_id: str, project_id: str | None, data: bytes, fmt: str, *, dry_run: bool = False
) -> ImportResult:
    """Imports a file into a project: all its good rows in one transaction, or (dry_run) nothing."""
    await check_project(db, tenant_id, project_id)
    assert project_id is not None
    parsed = await asyncio.to_thread(parse, data, fmt)
    checked: dict[str, str | None] = {}
    users = await field_service.tenant_users(db, tenant_id) if parsed.field_keys else None
    plan = await plan_import(db, tenant_id, project_id, parsed, checked, users)
    if dry_run:
        return _result(plan)
    # planned again under the write lock (the library may have changed meanwhile), but the slow part,
    # parsing the Gherkin texts, was done above without holding it
    async with db.transaction() as tx:
        plan = await plan_import(tx, tenant_id, project_id, parsed, checked, users)
        await _apply(tx, tenant_id, project_id, plan, parsed)
    return _result(plan)


def _result(plan: Plan) -> ImportResult:
    return ImportResult(plan.created, plan.updated, plan.unchanged, plan.rejected, plan.errors,
                        len(plan.new_sections))


async def _apply(tx: Transaction, tenant_id: str, project_id: str, plan: Plan, parsed: Parsed) -> None:
    now = now_iso()
    sections = await section_store.list_for_project(tx, tenant_id, project_id)
    by_path = {tuple(p.split(PATH_SEPARATOR)): sid for sid, p in section_paths(sections).items()}
    paths = {row["id"]: row["path"] for row in sections}
    if plan.new_sections:
        ids = iter(new_ids(len(plan.new_sections)))
        rows: list[dict[str, Any]] = []
        for path in plan.new_sections:  # parents come first: each path after its prefixes
            section_id = next(ids)
            parent_id = by_path.get(path[:-1]) if len(path) > 1 else None
            prefix = paths[parent_id] if parent_id else "/"
            rows.append({"id": section_id, "tenant_id": tenant_id, "project_id": project_id, "parent_id": parent_id,
                         "name": path[-1], "description": parsed.sections.get(path), "position": 0,
                         "path": f"{prefix}{section_id}/", "created_at": now, "updated_at": now})
            by_path[path] = section_id
            paths[section_id] = rows[-1]["path"]
        siblings: dict[str | None, int] = {}
        for new in rows:  # new sections follow the existing ones of their parent, in file order
            if new["parent_id"] not in siblings:
                siblings[new["parent_id"]] = await section_store.next_position(
                    tx, tenant_id, project_id, new["parent_id"])
            new["position"] = siblings[new["parent_id"]]
            siblings[new["parent_id"]] += 1
        await section_store.insert_sections(tx, rows)
    fields_created = []
    if parsed.inferred:
        fields_created = await field_service.create_missing(tx, tenant_id, project_id, list(parsed.inferred.values()))
    if plan.creates:
        bodies = []
        for row, body in plan.creates:
            body.project_id = project_id
            body.section_id = by_path.get(row.section) if row.section else None
            bodies.append(body)
        # their custom field values were checked (defaults added) by the plan
        await case_service.insert_checked(tx, tenant_id, bodies, now, copy_fields=True)
    if plan.updates:
        columns = sorted({k for _, _, changes in plan.updates for k in changes} | {"project_id"})
        rows = []
        # issue 26: under require_review an import sets no case READY that is not approved
        strict = bool(await project_store.requires_review(tx, tenant_id, [project_id]))
        for row, old, changes in plan.updates:
            values = {c: old[c] for c in columns}
            values.update(changes)
            if strict and values.get("status") == "READY" and old["status"] != "READY" \
                    and old.get("review_state") != "APPROVED":
                values["status"] = old["status"]
            if isinstance(values.get("section_id"), tuple):
                values["section_id"] = by_path.get(row.section) if row.section else None
            values["project_id"] = project_id
            rows.append({**values, "id": old["id"], "tenant_id": tenant_id, "updated_at": now})
        await case_store.update_many(tx, rows, columns)
        edited = [old["id"] for _, old, changes in plan.updates if set(changes) - {"status"}]
        await case_store.reopen_approved(tx, tenant_id, edited, await case_service.actor_user_id(tx, tenant_id), now)
        await case_service.record_versions(tx, tenant_id, [old["id"] for _, old, _ in plan.updates], now)
    await audit.record(tx, tenant_id, "case.imported", "project", project_id, {
        "created": plan.created, "updated": plan.updated, "unchanged": plan.unchanged, "rejected": plan.rejected,
        "sections_created": len(plan.new_sections), "custom_fields_created": fields_created,
    })
