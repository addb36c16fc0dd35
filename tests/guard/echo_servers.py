"""Echo servers for the guard tests; each reports back everything identity could ride in.

    python echo_servers.py mcp-stdio            # MCP server over stdio
    python echo_servers.py mcp-http PORT        # MCP server over streamable HTTP at /mcp
    python echo_servers.py http PORT            # HTTP endpoint: any path returns the request headers

The MCP tool ``echo_meta`` returns JSON ``{"meta": <the request's _meta>, "headers": <HTTP headers or null>}``.
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("echo")


@mcp.tool()
def echo_meta(ctx: Context) -> str:
    """Return the ``_meta`` and the HTTP headers this request arrived with."""
    meta = ctx.request_context.meta
    if hasattr(meta, "model_dump"):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    headers = ctx.headers
    return json.dumps({"meta": dict(meta or {}), "headers": dict(headers) if headers is not None else None})


def http_echo_app():
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def echo(request):
        return JSONResponse({"headers": dict(request.headers)})

    methods = ["GET", "POST", "PUT", "DELETE"]
    return Starlette(routes=[Route("/", echo, methods=methods), Route("/{path:path}", echo, methods=methods)])


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "mcp-stdio":
        mcp.run("stdio")
    elif mode == "mcp-http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        import uvicorn

        uvicorn.run(http_echo_app(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
