"""Bodies of /api/v1/shared-steps: a named list of Gherkin step lines a project's cases use."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from tms.http.fields import RequestBody
from tms.library.cases.models import Pagination

# a name is what a case writes after `* shared: `: one line, no surrounding blanks or control characters
# (spelled as ranges, not \S: Python's \S and a JSON Schema client's disagree on \x1c-\x1f)
StepName = Annotated[str, msgspec.Meta(min_length=1, max_length=200,
                                       pattern=r"^[^\x00-\x20\x7f](?:[^\r\n]*[^\x00-\x20\x7f])?$")]
# the step lines as text: Given/When/Then/And/But/* lines, their tables and doc strings, comments
StepLines = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]
# "used by" lists at most this many cases (used_by_total says how many there are)
USED_BY_LIMIT = 1_000


class CaseRef(msgspec.Struct):
    id: str
    code: str
    title: str


class SharedStep(msgspec.Struct):
    id: str
    project_id: str
    name: str
    steps: str
    version: int
    created_at: str
    updated_at: str
    # the cases using it, directly or through another shared step, at most USED_BY_LIMIT of them, and
    # how many there are (in the answers about one shared step; null in lists)
    used_by: list[CaseRef] | None = None
    used_by_total: int | None = None


class SharedStepCreate(RequestBody):
    project_id: str
    name: StepName
    steps: StepLines


class SharedStepUpdate(RequestBody):
    """A change of name or steps makes a new version of every case using it (listed in ``used_by``);
    a new name is written into those cases' `* shared:` lines."""

    name: StepName | UnsetType = UNSET
    steps: StepLines | UnsetType = UNSET


class SharedStepEnvelope(msgspec.Struct):
    data: SharedStep


class SharedStepList(msgspec.Struct):
    data: list[SharedStep]
    pagination: Pagination
