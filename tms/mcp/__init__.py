"""`tms mcp`: a Model Context Protocol server (stdio) that lets an AI assistant read and write the
test library through the public API. A client of the server like `tms ingest`: httpx to /api/v1
with a token, no database access, nothing imported from the server's layers.

``client.py`` talks HTTP and turns problem details into readable errors, ``tools.py`` defines the
tools (read tools always, write tools only when the token has the ``write`` scope), ``cli.py`` is
the command.
"""
