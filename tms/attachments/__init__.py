"""Attachments: uploads, their checks and their storage."""
