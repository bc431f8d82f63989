-- Sign-in from a company's directory (issue 25): SCIM 2.0 provisioning and LDAP / Active Directory bind.
-- PostgreSQL: postgres/0010_ldap_scim.sql (the same tables, columns and indexes).

-- A user an identity provider provisioned over SCIM: the resource as it last wrote it (JSON, without
-- id, meta and groups, which the server owns), linked to the TMS user it created or adopted.
CREATE TABLE scim_users (
    user_id     TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    tenant_id   TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_name   TEXT NOT NULL COLLATE NOCASE,  -- SCIM userName: unique per tenant, case-insensitive
    external_id TEXT,
    resource    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX scim_users_name ON scim_users (tenant_id, user_name);

-- SCIM groups: a group's display name maps to a role (scim_settings.group_role_map).
CREATE TABLE scim_groups (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    display_name TEXT NOT NULL,
    external_id  TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX scim_groups_tenant ON scim_groups (tenant_id, display_name);

CREATE TABLE scim_group_members (
    group_id TEXT NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
    user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    display  TEXT,  -- as the provider named the member (else the user's userName is shown)
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members (user_id);

-- Per tenant: which SCIM group gives which role, and the role of a provisioned user in none of them.
-- No row: the defaults (tms-admins, tms-testers, tms-viewers; viewer).
CREATE TABLE scim_settings (
    tenant_id      TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    group_role_map TEXT NOT NULL,  -- JSON object: group display name -> admin | tester | viewer
    default_role   TEXT NOT NULL,
    updated_at     TEXT NOT NULL
);

-- Per tenant LDAP / Active Directory sign-in. bind_password is write-only: never shown, returned or logged.
CREATE TABLE ldap_settings (
    tenant_id        TEXT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    enabled          INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    url              TEXT NOT NULL,             -- ldap://host:389 (with StartTLS) or ldaps://host:636
    start_tls        INTEGER NOT NULL DEFAULT 1 CHECK (start_tls IN (0, 1)),
    ca_cert          TEXT NOT NULL DEFAULT '',  -- PEM: the CA that signed the server's certificate
    user_dn_template TEXT NOT NULL DEFAULT '',  -- uid={username},ou=people,dc=example,dc=org
    search_base      TEXT NOT NULL DEFAULT '',  -- or: search the user with a service bind
    search_filter    TEXT NOT NULL DEFAULT '',
    bind_dn          TEXT NOT NULL DEFAULT '',
    bind_password    TEXT NOT NULL DEFAULT '',
    group_base       TEXT NOT NULL DEFAULT '',  -- groups searched by member; memberOf is read as well
    group_role_map   TEXT NOT NULL DEFAULT '{}',  -- JSON object: group DN or CN -> admin | tester | viewer
    default_role     TEXT NOT NULL DEFAULT '',  -- '' refuses a user no group maps
    updated_at       TEXT NOT NULL
);
