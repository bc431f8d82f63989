"""Bodies of /api/v1/custom-fields: a project's typed fields for cases (and, later, results)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import Name, RequestBody

FieldType = Literal["text", "textarea", "number", "checkbox", "date", "url", "select", "multiselect", "user"]
FIELD_TYPES: tuple[str, ...] = ("text", "textarea", "number", "checkbox", "date", "url", "select", "multiselect",
                                "user")
Entity = Literal["case", "result"]
ENTITIES: tuple[str, ...] = ("case", "result")
# a key names the field in JSON, in `cf.<key>=` filters and in `cf:<key>` CSV columns
KEY_PATTERN = r"^[a-z0-9_]+$"
Key = Annotated[str, msgspec.Meta(pattern=KEY_PATTERN, min_length=1, max_length=50)]
Option = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Options = Annotated[list[Option], msgspec.Meta(max_length=200)]
Position = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]


class CustomField(msgspec.Struct):
    id: str
    project_id: str
    key: str
    name: str
    type: str
    entity: str
    options: list[str]
    required: bool
    default: Any
    position: int
    # retired: hidden from forms and new values refused; the values cases hold are kept
    retired: bool
    created_at: str
    updated_at: str


class CustomFieldCreate(RequestBody):
    project_id: str
    key: Key
    name: Name
    type: FieldType
    entity: Entity = "case"
    options: Options | None = None
    required: bool = False
    default: Any = None
    position: Position | None = None


class CustomFieldUpdate(RequestBody):
    """The key, type and entity of a field never change (values are stored under the key)."""

    name: Name | UnsetType = UNSET
    options: Options | UnsetType = UNSET
    required: bool | UnsetType = UNSET
    default: Any = UNSET
    position: Position | UnsetType = UNSET
    retired: bool | UnsetType = UNSET


class CustomFieldEnvelope(msgspec.Struct):
    data: CustomField


class CustomFieldList(msgspec.Struct):
    data: list[CustomField]
