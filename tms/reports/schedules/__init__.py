"""Scheduled mail reports (issue 27): models, api, web, service, store."""
