"""Runs: a project's executions of its cases, their results, ingest, shards and retention."""
