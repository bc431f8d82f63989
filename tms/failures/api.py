"""/api/v1/runs/{id}/failures (clusters by fingerprint) and /api/v1/runs/{id}/compare."""

from __future__ import annotations

from litestar import get

from tms.failures import service
from tms.failures.models import ClusterList, ComparisonEnvelope
from tms.http.api_auth import ApiRequest, requires
from tms.state import DatabaseDep


@get("/runs/{run_id:str}/failures", **requires("read"),
     summary="The run's failures grouped by fingerprint, largest first; new and known ones marked")
async def run_failures(request: ApiRequest, db: DatabaseDep, run_id: str) -> ClusterList:
    return ClusterList(data=await service.clusters(db, request.user.tenant_id, run_id))


@get("/runs/{run_id:str}/compare", **requires("read"),
     summary="Compare a run with `base` (default: the previous run of its project and environment)")
async def compare_runs(request: ApiRequest, db: DatabaseDep, run_id: str,
                       base: str | None = None) -> ComparisonEnvelope:
    return ComparisonEnvelope(data=await service.compare(db, request.user.tenant_id, run_id,
                                                         base))
