"""Body and answer of POST /api/v1/ingest."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from tms.http.fields import Label, Name, RequestBody
from tms.runs.results.models import ItemError, ResultIn

RunRef = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]

# Free text of a result item (``ResultIn``) copied from test reports: failure messages, stack traces and
# captured output (the reporter puts notes and stdout in ``comment`` and ``error_stack``). A NUL character
# in them (a test printing a C string, a binary protocol dump) is stored as U+FFFD by
# ``tms.http.bodies.request_body``: refusing it would lose the whole run, and replacing it keeps the text
# readable. NUL anywhere else in an ingest or results body (titles, codes, keys, run names) is a 400
# naming the field, as in every other body.
NUL_REPLACED_FIELDS = frozenset({"error_message", "error_stack", "comment"})


class IngestBody(RequestBody):
    project_id: str
    results: list[ResultIn]
    run_name: Name | None = None
    environment: Label | None = None
    framework: Label | None = None
    # a shard: add to this existing, unfinished run of the project (tms.runs.ingest.shards)
    run_id: RunRef | None = None


class IngestBodyLoose(RequestBody):
    project_id: str
    results: list[Any]
    run_name: Name | None = None
    environment: Label | None = None
    framework: Label | None = None
    run_id: RunRef | None = None


class IngestAnswer(msgspec.Struct):
    run_id: str
    accepted: int
    rejected: int
    errors: list[ItemError]
    # per item of `results`, in order: the id of the result it was stored in (null when rejected);
    # items naming one case share that case's result. Lets a client attach files to each result.
    result_ids: list[str | None] = []
