"""/api/v1/cases/export and /api/v1/cases/import: a project's library as CSV, and CSV or TestRail XML in."""

from __future__ import annotations

from dataclasses import dataclass

from litestar import Response, get, post
from litestar.datastructures import UploadFile
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Operation, Schema
from litestar.openapi.spec import RequestBody as OpenAPIRequestBody
from litestar.response import Stream

from tms.errors import InvalidInput
from tms.http.api_auth import ApiRequest, requires
from tms.library.transfer import export as case_export
from tms.library.transfer import service as case_io
from tms.library.transfer.csvfile import MAX_IMPORT_BYTES
from tms.library.transfer.models import ImportAnswer, RowError
from tms.state import DatabaseDep


@dataclass
class _ImportOperation(Operation):
    def __post_init__(self) -> None:
        self.request_body = OpenAPIRequestBody(
            required=True,
            content={"multipart/form-data": OpenAPIMediaType(schema=Schema(
                type=OpenAPIType.OBJECT,
                properties={"file": Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)},
                required=["file"],
            ))},
        )


@get("/cases/export", **requires("read"), summary="Export a project's cases as CSV (streamed)",
     media_type="text/csv",
     responses={200: ResponseSpec(str, media_type="text/csv", description="The cases as CSV (UTF-8), one row a case",
                                  generate_examples=False)},
     description="Columns: code, title, section, status, priority, layer, is_e2e, automation_status, tags, "
     "tickets, bdd_content. `section` is the path `Parent / Child`; tags `;`-separated; tickets `SOURCE:KEY;…`. "
     "A cell starting with `=`, `+`, `-`, `@`, tab or CR (a spreadsheet formula) starts with `'`, as does one "
     "starting with `'` and one of those or `'`; the import takes that quote off again.")
async def export_cases(request: ApiRequest, db: DatabaseDep, project_id: str | None = None,
                       format: str = "csv") -> Stream:
    if format != "csv":
        raise InvalidInput("format must be csv", field="format")
    tenant = request.user.tenant_id
    await case_io.check_project(db, tenant, project_id)
    assert project_id is not None
    return Stream(
        case_export.export_csv(db, tenant, project_id),
        media_type="text/csv",  # Litestar adds "; charset=utf-8" to text types
        headers={"Content-Disposition": 'attachment; filename="cases.csv"'},
    )


def answer(result: case_io.ImportResult, dry_run: bool) -> ImportAnswer:
    return ImportAnswer(
        created=result.created, updated=result.updated, rejected=result.rejected,
        errors=[RowError(row=row, error=error) for row, error in result.errors],
        unchanged=result.unchanged, sections_created=result.sections_created, dry_run=dry_run,
    )


@post("/cases/import", **requires("write"), operation_class=_ImportOperation,
      request_max_body_size=MAX_IMPORT_BYTES + 64 * 1024,
      summary="Import cases from CSV or TestRail XML (one transaction)",
      description="multipart/form-data with a part `file`. 201 when every row imported, 207 when some were "
      "rejected (listed by row); a file-level problem is a 400 and changes nothing. dry_run=true plans only.")
async def import_cases(request: ApiRequest, db: DatabaseDep, project_id: str | None = None,
                       format: str = "csv", dry_run: bool = False) -> Response[ImportAnswer]:
    form = await request.form()
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise InvalidInput("send the file as a multipart/form-data part named 'file'", field="file")
    data = await upload.read()
    result = await case_io.import_cases(db, request.user.tenant_id, project_id, data, format,
                                        dry_run=dry_run)
    return Response(answer(result, dry_run), status_code=207 if result.rejected else 201)
