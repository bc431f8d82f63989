"""/api/v1/me."""
