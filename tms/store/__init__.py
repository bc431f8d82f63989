"""SQL only, one module per table family. Each query sits next to the function that runs it.

Functions take the ``Database`` (reads) or a ``Transaction`` (writes) and always a tenant id:
no query here reads or changes a row without filtering on its tenant.
"""
