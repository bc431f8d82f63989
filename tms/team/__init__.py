"""The team: users and roles, sign-in, tokens, tenants, audit."""
