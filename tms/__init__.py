"""TMS: a self-hosted, multi-tenant test management service."""

__version__ = "0.1.0"
