"""a2a-sdk's own spans (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED``) with the plugin on and off: a
real server on 127.0.0.1 and a real client in one process (``sdk_spans_app.py``), in-memory
exporter, one non-streaming and one streaming send under an application span ``app``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "examples"
#: the span of a2a-sdk's dispatcher that calls the request handler, per (binding, streaming)
HANDLER_CALLER = {
    ("JSONRPC", False): "JsonRpcDispatcher._handle_send_message",
    ("JSONRPC", True): "JsonRpcDispatcher._process_streaming_request",
    ("HTTP+JSON", False): "RestDispatcher._handle_non_streaming",
    ("HTTP+JSON", True): "RestDispatcher._handle_streaming",
}
#: a2a-sdk's dispatcher endpoint span, the first of a2a-sdk's on the server
ENDPOINT = {"JSONRPC": "JsonRpcDispatcher.handle_requests", "HTTP+JSON": "RestDispatcher.on_message_send"}


def sends(plugin: str, sdk_spans: bool, binding: str = "JSONRPC") -> dict[bool, list[dict]]:
    """streaming -> the spans of that send (``sdk_spans_app.py``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=str(EXAMPLES), OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=str(sdk_spans).lower())
    out = subprocess.run(
        [sys.executable, str(HERE / "sdk_spans_app.py"), "--plugin", plugin, "--binding", binding],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    return {False: json.loads(out[0]), True: json.loads(out[1])}


def named(spans: list[dict], suffix: str) -> dict:
    (span,) = [s for s in spans if s["name"].endswith(suffix)]
    return span


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_every_span_of_a_request_continues_the_callers_trace(binding):
    """Plugin on, a2a-sdk's spans on (docs/a2a.md, "a2a-sdk's own spans"): one trace per send, rooted
    at the application's span, every parent a span of it. Our SERVER span is the first span of the
    server (child of the CLIENT send span: the collector's callee entry span); a2a-sdk's dispatcher
    endpoint span is its child, and a2a-sdk's own tree below it is as without the plugin."""
    for streaming, spans in sends("on", True, binding).items():
        app = named(spans, "app")
        assert {s["trace"] for s in spans} == {app["trace"]}, streaming
        assert [s["name"] for s in spans if s["parent"] is None] == ["app"], streaming
        assert {s["parent"] for s in spans} - {None} <= {s["span"] for s in spans}, streaming
        client = named(spans, "invoke_agent echo")
        ours = named(spans, "SendStreamingMessage" if streaming else "SendMessage")
        assert ours["parent"] == client["span"] and ours["kind"] == "SERVER"
        assert [s["name"] for s in spans if s["parent"] == ours["span"]] == [
            "a2a.server.routes."
            + ("jsonrpc_dispatcher." if binding == "JSONRPC" else "rest_dispatcher.")
            + ENDPOINT[binding]
            + ("_stream" if streaming and binding != "JSONRPC" else "")
        ]
        assert named(spans, HANDLER_CALLER[binding, streaming])["trace"] == app["trace"]
        assert sum(s["scope"] == "a2a-python-sdk" and s["name"].startswith("a2a.server.") for s in spans) > 20
        if not streaming:  # a2a-sdk's handler span under its dispatcher's, as without us
            handler = named(spans, "DefaultRequestHandlerV2.on_message_send")
            assert handler["parent"] == named(spans, HANDLER_CALLER[binding, streaming])["span"]


def test_without_the_plugin_a2a_sdk_serves_in_a_trace_of_its_own():
    """The evidence docs/a2a.md cites: a2a-sdk 1.3 injects no ``traceparent`` and extracts none,
    so with its own spans alone all the server's spans start a new trace per request (streaming:
    plus, seen every time here, an ``EventQueueSource.remove_sink`` root); the client's stay in
    the application's."""
    for spans in sends("off", True).values():
        app = named(spans, "app")
        client = [s for s in spans if s["name"].startswith("a2a.client.")]
        server = [s for s in spans if s["name"].startswith("a2a.server.")]
        assert client and all(s["trace"] == app["trace"] for s in client)
        assert server and all(s["trace"] != app["trace"] for s in server)
        assert named(spans, "JsonRpcDispatcher.handle_requests")["parent"] is None
        assert not any(s["scope"] == "otel_agent_identity" for s in spans)
        roots = [s["name"].rsplit(".", 1)[1] for s in server if s["parent"] is None]
        assert "handle_requests" in roots and set(roots) <= {"handle_requests", "remove_sink"}


def test_without_a2a_sdk_spans_ours_are_unchanged():
    """a2a-sdk's spans off: only ours, the SERVER span the child of the CLIENT span, one trace."""
    for streaming, spans in sends("on", False).items():
        assert sorted(s["name"] for s in spans) == sorted(
            ["app", "invoke_agent echo", "SendStreamingMessage" if streaming else "SendMessage"]
        )
        client = named(spans, "invoke_agent echo")
        server = named(spans, "SendStreamingMessage" if streaming else "SendMessage")
        assert server["parent"] == client["span"] and server["trace"] == client["trace"]
        assert client["parent"] == named(spans, "app")["span"]


async def test_a_send_that_fails_before_the_handler_still_ends_our_span_and_get_task_gets_its_own(
    instrumentor, exporter
):
    """In process (routes built after ``instrument()``, httpx's ASGI transport): a JSON-RPC send
    whose params a2a-sdk rejects never reaches the request handler; the SERVER span the dispatcher's
    wrapper started ends anyway, in the caller's trace. A ``GetTask`` (a long-running task's poll)
    gets a ``GetTask`` SERVER span of ours, in the caller's trace too (``adapters/a2a/tasks.py``)."""
    import httpx
    from a2a_serve import ReplyExecutor, executor_app

    url = "http://127.0.0.1:9/"
    app = executor_app(ReplyExecutor(False, None), url, "echo")
    caller = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        for method in ("SendMessage", "GetTask"):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"bogus": 1}}
            response = await http.post(url, json=body, headers={"traceparent": caller, "A2A-Version": "1.0"})
            assert "error" in response.json()
    ours = [s for s in exporter.get_finished_spans() if s.instrumentation_scope.name == "otel_agent_identity"]
    assert [s.name for s in ours] == ["SendMessage", "GetTask"]
    for span in ours:
        assert format(span.context.trace_id, "032x") == "ab" * 16 and format(span.parent.span_id, "016x") == "cd" * 8
