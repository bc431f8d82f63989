"""Outbound webhooks: the outbox dispatcher, one delivery attempt, signing, SSRF checks."""
