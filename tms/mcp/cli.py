"""`tms mcp --url URL --token TOKEN`: the MCP server on standard input/output.

Standard output carries the protocol only; every message of ours goes to standard error. The
token's scopes are read once from GET /api/v1/me at start: with ``read`` alone only the read tools
are offered. The token never appears in an error text.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import anyio

EXIT_USAGE = 2
EXIT_UNREACHABLE = 4


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="service base URL (default: $TMS_URL)")
    parser.add_argument("--token", help="API token; read scope gives the read tools, write adds the rest "
                                        "(default: $TMS_TOKEN)")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="time limit of one API request (default: 30)")


def _say(text: str, token: str) -> None:
    if len(token) >= 4:
        text = text.replace(token, "***")
    sys.stderr.write(f"tms mcp: {text}\n")
    sys.stderr.flush()


async def _serve(url: str, token: str, request_timeout: float) -> int:
    from tms.mcp.client import TmsClient
    from tms.mcp.tools import build_server

    api = TmsClient(url, token, timeout=request_timeout)
    try:
        try:
            me = await api.get("/me")
        except Exception as exc:  # ToolError (an answer) or ApiError: either way the server cannot start
            _say(f"cannot use {url}: {exc}", token)
            return EXIT_UNREACHABLE
        scopes = set(me.get("scopes") or [])
        server = build_server(api, scopes)
        tenant = (me.get("tenant") or {}).get("name") or "?"
        _say(f"serving tenant {tenant!r} over stdio with scopes {','.join(sorted(scopes)) or 'none'}", token)
        await server.run_stdio_async()
        return 0
    finally:
        await api.aclose()


def run_mcp(args: argparse.Namespace) -> int:
    url = (args.url or os.environ.get("TMS_URL") or "").strip().rstrip("/")
    token = (args.token or os.environ.get("TMS_TOKEN") or "").strip()
    if not url or not token:
        _say("error: give --url and --token (or set TMS_URL and TMS_TOKEN)", token)
        return EXIT_USAGE
    # httpx logs every request at INFO; the host of an assistant shows standard error to its user
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        return anyio.run(_serve, url, token, args.timeout)
    except KeyboardInterrupt:
        return 130
