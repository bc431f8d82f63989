"""The values custom fields hold, checked without the database: a value against its field's type and
options (``check_value``), a case's or a result's values merged with defaults and required fields
(``merge_case_fields``, ``ResultFieldRules``), their JSON, CSV cells and form fields."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlsplit

import msgspec

from tms.errors import NUL, InvalidInput
from tms.library.fields.models import CustomField

TEXT_LIMITS = {"text": 1000, "textarea": 20_000, "url": 2000}
CHOICES = ("select", "multiselect")
# a multiselect's options are `;`-separated in CSV cells, as tags are
OPTION_SEPARATOR = ";"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_options = msgspec.json.Decoder(list[str])
_encoder = msgspec.json.Encoder()
_values = msgspec.json.Decoder(dict[str, Any])
# {user id or lower-cased e-mail: user id} of a tenant: what a `user` field accepts
Users = Mapping[str, str]


def where(key: str) -> str:
    return f"custom_fields.{key}"


def _bad(key: str, message: str) -> InvalidInput:
    return InvalidInput(f"{where(key)}: {message}", field=where(key))


def check_value(field: CustomField, value: Any, users: Users | None) -> Any:
    """The value as stored (a number made an int when whole, a multiselect without repeats), or None
    for "no value" (null, an empty string, an empty list). A wrong type, an unknown option or user is a
    400 naming ``custom_fields.<key>``. ``users`` is needed only for values of `user` fields."""
    key, kind = field.key, field.type
    if value is None:
        return None
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise _bad(key, f"must be a number, not {_kind_of(value)}")
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            return int(value)
        return value
    if kind == "checkbox":
        if not isinstance(value, bool):
            raise _bad(key, f"must be true or false, not {_kind_of(value)}")
        return value
    if kind == "multiselect":
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise _bad(key, f"must be a list of options, not {_kind_of(value)}")
        chosen = list(dict.fromkeys(item.strip() for item in value if item.strip()))
        for item in chosen:
            if item not in field.options:
                raise _bad(key, f"{item!r} is not one of its options ({', '.join(field.options)})")
        return chosen or None
    if not isinstance(value, str):
        raise _bad(key, f"must be a string, not {_kind_of(value)}")
    if NUL in value:
        raise _bad(key, "must not contain NUL characters (U+0000)")
    text = value if kind == "textarea" else value.strip()
    if not text.strip():
        return None
    limit = TEXT_LIMITS.get(kind)
    if limit is not None and len(text) > limit:
        raise _bad(key, f"is {len(text):,} characters long; at most {limit:,}")
    if kind == "url":
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _bad(key, f"{text[:100]!r} is not an http(s) URL")
    elif kind == "date":
        try:
            if not _DATE.match(text):
                raise ValueError
            date.fromisoformat(text)
        except ValueError:
            raise _bad(key, f"{text[:40]!r} is not a date (YYYY-MM-DD)") from None
    elif kind == "select":
        if text not in field.options:
            raise _bad(key, f"{text!r} is not one of its options ({', '.join(field.options)})")
    elif kind == "user":
        if users is None:
            raise RuntimeError("user fields are checked against the tenant's users: pass them")
        found = users.get(text) or users.get(text.lower())
        if found is None:
            raise _bad(key, f"{text[:100]!r} is not a user of this workspace")
        return found
    return text


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def needs_users(given: Mapping[str, Any] | None) -> bool:
    """Whether checking these values may need the tenant's users (any non-empty string value)."""
    return bool(given) and any(isinstance(v, str) and v.strip() for v in (given or {}).values())


def merge_case_fields(
    fields: Mapping[str, CustomField], current: Mapping[str, Any], given: Mapping[str, Any] | None, *,
    creating: bool, users: Users | None, entity: str = "case", enforce_required: bool = True,
) -> dict[str, Any]:
    """A case's values once ``given`` is applied to ``current`` (keys given with null or "" are removed).

    - a key the case's project does not define (for cases) is a 400 naming it;
    - a retired field keeps its value; giving it a different one is a 400;
    - on create, an active field left out gets its default;
    - on create, and on a change that gives custom_fields, every active required field needs a value.
    Keys come back sorted, so equal values are equal JSON.
    """
    result = dict(current)
    for key, value in (given or {}).items():
        field = fields.get(key)
        if field is None:
            raise _bad(key, f"there is no custom field {key!r} for {entity}s in this project")
        checked = check_value(field, value, users)
        if field.retired and checked != current.get(key):
            raise _bad(key, "the field is retired: the values cases hold are kept, new ones are refused")
        if checked is None:
            result.pop(key, None)
        else:
            result[key] = checked
    active = [field for field in fields.values() if not field.retired]
    if creating:
        for field in active:
            if field.key not in result and field.default is not None:
                result[field.key] = field.default
    if enforce_required and (creating or given is not None):
        for field in active:
            if field.required and result.get(field.key) is None:
                raise _bad(field.key, f"{field.name} is required")
    return dict(sorted(result.items()))


def encode(values: Mapping[str, Any]) -> str:
    return _encoder.encode(dict(sorted(values.items()))).decode()




EMPTY = "{}"


@dataclass(frozen=True, slots=True)
class ResultFieldRules:
    """A project's result fields, read once for a whole batch of results (ingest, shards, ``POST
    results``), so that each item is checked in memory: no query per item.

    ``encoded`` checks one item's values and returns the JSON to store. A reported result gets the
    defaults of the fields it leaves out, but required fields are not enforced: a test report cannot
    know a project's fields, and refusing its results would lose the run; the tester who reviews the
    result fills them in (the execution view and ``PATCH`` enforce them).
    """

    fields: Mapping[str, CustomField]
    users: Users | None
    defaults: str  # the JSON of an item that gives no values: every default, or "{}"

    def encoded(self, given: Mapping[str, Any] | None) -> str:
        if not given:
            return self.defaults
        merged = merge_case_fields(self.fields, {}, given, creating=True, users=self.users, entity="result",
                                   enforce_required=False)
        return encode(merged)

    def merged(self, current: Mapping[str, Any], given: Mapping[str, Any] | None, *, require: bool) -> dict[str, Any]:
        """A result's values after a save by hand: ``given`` applied to ``current``; with ``require``
        (the save records an outcome, or gives values) every active required field needs a value."""
        return merge_case_fields(self.fields, current, given if given is not None or not require else {},
                                 creating=False, users=self.users, entity="result", enforce_required=require)


NO_RESULT_FIELDS = ResultFieldRules({}, None, EMPTY)


def decode_values(text: str | None) -> dict[str, Any]:
    """A result's stored values (JSON text) as a dict; the empty object costs no decode."""
    if not text or text == EMPTY:
        return {}
    values: dict[str, Any] = _values.decode(text)
    return values




# --------------------------------------------------------------------------------------------- CSV cells


CELL_TRUE = frozenset({"true", "1", "yes", "y"})
CELL_FALSE = frozenset({"false", "0", "no", "n"})


def value_from_cell(field: CustomField, cell: str) -> Any:
    """A `cf:<key>` CSV cell as the value ``check_value`` takes (an empty cell is no value); ValueError
    when the text cannot be one (a number, true/false)."""
    text = cell if field.type == "textarea" else cell.strip()
    if not text.strip():
        return None
    if field.type == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{text[:40]!r} is not a number") from None
    if field.type == "checkbox":
        if text.lower() in CELL_TRUE:
            return True
        if text.lower() in CELL_FALSE:
            return False
        raise ValueError(f"{text[:40]!r} is not true or false")
    if field.type == "multiselect":
        return [part.strip() for part in text.split(OPTION_SEPARATOR) if part.strip()]
    return text


def cell_of(field: CustomField | None, value: Any, emails: Mapping[str, str]) -> str:
    """A value as its `cf:<key>` CSV cell (``value_from_cell`` reads it back): a user as an e-mail."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return OPTION_SEPARATOR.join(str(item) for item in value)
    if field is not None and field.type == "user":
        return emails.get(str(value), str(value))
    return str(value)


def user_emails(users: Users) -> dict[str, str]:
    """{user id: e-mail} from ``tenant_users``."""
    return {user_id: key for key, user_id in users.items() if key != user_id}


def with_inferred(fields: Mapping[str, CustomField], inferred: Mapping[str, CustomField]) -> dict[str, CustomField]:
    """The project's case fields as an import will have them once ``create_missing`` made the inferred
    ones (a select's missing options added): what its rows are checked against before anything is written."""
    out = dict(fields)
    for key, draft in inferred.items():
        field = out.get(key)
        if field is None:
            out[key] = draft
        elif field.type in CHOICES and draft.options:
            out[key] = msgspec.structs.replace(
                field, options=field.options + [o for o in draft.options if o not in field.options])
    return out


def draft_field(key: str, name: str, kind: str, options: list[str]) -> CustomField:
    """A field an import will create (TestRail's `custom_*` fields), not yet stored."""
    return CustomField(id="", project_id="", key=key, name=name, type=kind, entity="case", options=options,
                       required=False, default=None, position=0, retired=False, created_at="", updated_at="")


def values_from_form(fields: Mapping[str, CustomField], form: Mapping[str, str],
                     multi: Mapping[str, list[str]]) -> tuple[dict[str, Any], dict[str, str]]:
    """The case form's `cf.<key>` inputs of the active fields as ``custom_fields`` (an empty input is no
    value, an unticked checkbox false), and the errors of inputs that cannot be read ({custom_fields.<key>: …})."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields.values():
        if field.retired:
            continue
        name = f"cf.{field.key}"
        if field.type == "checkbox":
            values[field.key] = form.get(name) == "on"
        elif field.type == "multiselect":
            values[field.key] = [v for v in multi.get(name, []) if v]
        else:
            try:
                values[field.key] = value_from_cell(field, form.get(name, ""))
            except ValueError as exc:
                errors[where(field.key)] = f"{field.name}: {exc}"
    return values, errors


def form_values(fields: Mapping[str, CustomField], values: Mapping[str, Any]) -> dict[str, Any]:
    """A case's values as the form shows them: text as typed, a multiselect as its list, a user as its id."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        field = fields.get(key)
        if field is not None and field.type in ("multiselect", "checkbox"):
            out[f"cf.{key}"] = value
        else:
            out[f"cf.{key}"] = cell_of(field, value, {})
    return out
