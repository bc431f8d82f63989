from __future__ import annotations

from litestar import get

from tms.ai import quota as ai_quota
from tms.http.api_auth import ApiRequest, requires
from tms.state import app_state
from tms.team.me.models import AiInfo, Me, TenantInfo


@get("/me", **requires(None), summary="Who am I: tenant, token scopes and AI status")
async def get_me(request: ApiRequest) -> Me:
    principal = request.user
    state = app_state(request)
    exhausted = await ai_quota.quota_exhausted(state.db, state.config, principal.tenant_id)
    return Me(
        tenant=TenantInfo(id=principal.tenant_id, name=principal.tenant_name, status=principal.tenant_status),
        scopes=sorted(principal.scopes),
        ai=AiInfo(
            provider=state.config.get("ai.provider"),
            model=state.config.get("ai.model"),
            quota_exhausted=exhausted,
        ),
    )
