"""An offline API reference at /schema: the OpenAPI document rendered server-side, no CDN scripts."""

from __future__ import annotations

import html
from typing import Any

from litestar import Request
from litestar.openapi.plugins import OpenAPIRenderPlugin

_METHODS = ("get", "post", "put", "patch", "delete")


class ApiReferencePlugin(OpenAPIRenderPlugin):
    def __init__(self) -> None:
        super().__init__(path="/")

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        rows = []
        for path, item in sorted(openapi_schema.get("paths", {}).items()):
            for method in _METHODS:
                operation = item.get(method)
                if not operation:
                    continue
                scopes = [", ".join(s) or "any" for req in operation.get("security", []) for s in req.values()]
                rows.append(
                    f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                    f"<td>{html.escape(operation.get('summary', ''))}</td>"
                    f"<td>{html.escape(' / '.join(scopes) or '-')}</td></tr>"
                )
        info = openapi_schema.get("info", {})
        page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{html.escape(info.get("title", "API"))}</title><link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/app.css"></head>
<body><main><h1>{html.escape(info.get("title", "API"))} {html.escape(info.get("version", ""))}</h1>
<p>Machine-readable: <a href="openapi.json">openapi.json</a>.</p>
<div class="table-wrap"><table><thead><tr><th>Method</th><th>Path</th><th>Summary</th><th>Scope</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table></div></main></body></html>"""
        return page.encode()
