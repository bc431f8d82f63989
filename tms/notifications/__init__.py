"""Notifications: events, the outbox dispatcher, webhooks and chat."""
