"""Ingest: one request of CI results becomes a run (or a shard of one)."""
