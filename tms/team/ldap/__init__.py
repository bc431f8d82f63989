"""LDAP / Active Directory bind sign-in (issue 25): per-tenant settings, the directory client, the form."""
