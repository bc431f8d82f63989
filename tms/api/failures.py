"""/api/v1/runs/{id}/failures (clusters by fingerprint) and /api/v1/runs/{id}/compare."""

from __future__ import annotations

from litestar import Request, get

from tms.api.auth import requires
from tms.models.failures import ClusterList, ComparisonEnvelope
from tms.services import failures as service
from tms.services.tokens import ApiPrincipal


@get("/runs/{run_id:str}/failures", **requires("read"),
     summary="The run's failures grouped by fingerprint, largest first; new and known ones marked")
async def run_failures(request: Request[ApiPrincipal, str, object], run_id: str) -> ClusterList:
    return ClusterList(data=await service.clusters(request.app.state.db, request.user.tenant_id, run_id))


@get("/runs/{run_id:str}/compare", **requires("read"),
     summary="Compare a run with `base` (default: the previous run of its project and environment)")
async def compare_runs(request: Request[ApiPrincipal, str, object], run_id: str,
                       base: str | None = None) -> ComparisonEnvelope:
    return ComparisonEnvelope(data=await service.compare(request.app.state.db, request.user.tenant_id, run_id,
                                                         base))
