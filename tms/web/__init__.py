"""The session-authenticated web interface and the internal /api/webhooks API."""
