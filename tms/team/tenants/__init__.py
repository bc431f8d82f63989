"""Tenants (teams)."""
