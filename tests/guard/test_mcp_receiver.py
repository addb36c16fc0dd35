"""An instrumented MCP server (in this process, on 127.0.0.1) records the ids an allowlisted
client forwarded as ``agent_identity.upstream.*`` on its SERVER span."""

from __future__ import annotations

import threading
import time

import pytest
import uvicorn
from echo_servers import mcp as echo_server
from guard_helpers import free_port
from test_mcp_guard import _session_http

from otel_agent_identity.scope import IdentityScope
from scope_helpers import attach, detach

pytestmark = pytest.mark.e2e
UPSTREAM = {
    "agent_identity.upstream.conversation.id": "conv-1",
    "agent_identity.upstream.execution.id": "exec-1",
    "agent_identity.upstream.delegation.id": "del-1",
}


@pytest.fixture(scope="module")
def local_server():
    port = free_port()
    app = echo_server.streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(10)


def _server_span(exporter):
    spans = [s for s in exporter.get_finished_spans() if s.name == "tools/call echo_meta" and s.kind.name == "SERVER"]
    assert len(spans) == 1
    return spans[0]


@pytest.mark.parametrize("allowlisted", [True, False])
async def test_receiver_records_upstream(allowlisted, local_server, planted, guard, exporter):
    guard(allowlist=[local_server] if allowlisted else [])
    token = attach(IdentityScope("conv-1", "exec-1", "del-1"))
    try:
        await _session_http(local_server)
    finally:
        detach(token)
    attrs = dict(_server_span(exporter).attributes)
    recorded = {k: v for k, v in attrs.items() if k.startswith("agent_identity.upstream.")}
    assert recorded == (UPSTREAM if allowlisted else {})
