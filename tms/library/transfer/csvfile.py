"""The CSV side of an import or export file: its columns, the formula-safe cells (``neutralise`` /
``restore``), the limits an import file is held to, and the parsing of a CSV into ``Parsed`` rows.

See ``service.py`` for the rules a whole import follows."""


import csv
import io
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from tms.errors import NUL, NUL_MESSAGE, NUL_REPLACEMENT, InvalidInput
from tms.library.cases.models import CaseCreate
from tms.library.fields.models import CustomField
from tms.library.sections.service import PATH_SEPARATOR

COLUMNS = ("code", "title", "section", "status", "priority", "layer", "is_e2e", "automation_status", "tags",
           "tickets", "bdd_content")
REQUIRED_COLUMNS = ("title", "bdd_content")
# a custom field's column: "cf:" and the field's key
FIELD_COLUMN = re.compile(r"^cf:[a-z0-9_]{1,50}$")
FORMATS = ("csv", "testrail-xml")
# An import file is read whole (it is checked whole before anything is written); 20 MB holds about
# 40,000 typical cases. Larger files are refused with 413 before they are parsed.
MAX_IMPORT_BYTES = 20 * 1024 * 1024
# Gherkin checks cost ~0.1-0.3 ms a case in the official parser; big files are checked in worker processes
# when the machine has 3 cores to spare (plan._gherkin_errors), else in a thread.
PARALLEL_GHERKIN_FROM = 3000
# sections one import may name (every distinct path, each parent counted once) and how deep they nest
MAX_SECTIONS = 10_000
MAX_SECTION_DEPTH = 50
# elements inside each other in a TestRail file: two per section level, plus a case's own markup
MAX_XML_DEPTH = 2 * MAX_SECTION_DEPTH + 28
# the longest TestRail case id taken as a code (C-<digits>); a 5,000-digit id is not an export's
MAX_CASE_ID_DIGITS = 18

TRUE = {"true", "1", "yes", "y"}
FALSE = {"false", "0", "no", "n", ""}
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
