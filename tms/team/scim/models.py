"""What the SCIM service serves and announces, described with scim2-models (RFC 7643 / 7644).

The models, their validation in each request context, filters, PATCH operations, list responses and
error bodies are the library's: TMS stores what it is given and maps it to its own users and roles.
"""

from __future__ import annotations

from typing import Any

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    EnterpriseUser,
    ETag,
    Filter,
    Group,
    Patch,
    ResourceType,
    ScimProvider,
    ServiceProviderConfig,
    Sort,
    User,
)

MAX_RESULTS = 200  # a page of a list or search; also the default count
# User resources carry the enterprise extension (Entra ID, Okta and OneLogin send it)
UserResource: Any = User[EnterpriseUser]


CONFIG = ServiceProviderConfig(
    patch=Patch(supported=True),
    bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
    filter=Filter(supported=True, max_results=MAX_RESULTS),
    change_password=ChangePassword(supported=False),
    sort=Sort(supported=False),
    etag=ETag(supported=False),
    authentication_schemes=[
        AuthenticationScheme(
            type=AuthenticationScheme.Type.oauthbearertoken,
            name="Bearer token",
            description="A TMS API token with the scim scope (Settings → API tokens): Authorization: Bearer svc_…",
            primary=True,
        )
    ],
)

PROVIDER = ScimProvider(
    models=[User, EnterpriseUser, Group],
    resource_types=[ResourceType.from_resource(UserResource), ResourceType.from_resource(Group)],
    config=CONFIG,
)
