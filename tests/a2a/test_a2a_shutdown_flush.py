"""A specialist stopped (SIGTERM) right after answering keeps its last spans: uvicorn re-raises the
SIGTERM after its graceful shutdown, so the SDK's exit-time flush never runs;
``examples/a2a_serve.py`` flushes the providers in the app's lifespan shutdown. The batch delay is
set to 60 s, so only that flush can export the request's SERVER span (ground truth: the client got
the answer)."""

from __future__ import annotations

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a_test_support import ServerProcess, send_text

pytestmark = pytest.mark.e2e


async def test_the_last_request_s_spans_are_exported_at_sigterm():
    server = ServerProcess("flush-at-stop", shape="plain", OTEL_BSP_SCHEDULE_DELAY="60000")
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(server.url, client_config=ClientConfig(httpx_client=http, streaming=False))
            answered = await send_text(client, "")
        assert answered  # the request was served
        assert not server.spans()  # nothing exported yet: the batch waits 60 s
    finally:
        server.stop()  # SIGTERM
    found = server.wait_for(lambda s: s["kind"] == "SpanKind.SERVER" and s["name"] == "SendMessage", timeout=15)
    assert [s["attributes"].get("gen_ai.conversation.id") for s in found] == [answered]
