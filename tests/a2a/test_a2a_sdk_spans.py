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
#: a2a-sdk's HTTP dispatcher spans of a send (``handle_requests`` / the REST endpoint and what it
#: calls before the request handler), per (binding, streaming)
DISPATCHER = {
    ("JSONRPC", False): {
        "handle_requests",
        "_process_non_streaming_request",
        "_handle_send_message",
        "_create_response",
    },
    ("JSONRPC", True): {"handle_requests", "_process_streaming_request", "_create_response"},
    ("HTTP+JSON", False): {"on_message_send", "_handle_non_streaming", "_build_call_context"},
    ("HTTP+JSON", True): {"on_message_send_stream", "_handle_streaming", "_build_call_context"},
}


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
def test_with_the_plugin_only_a2a_sdks_dispatcher_spans_stay_in_a_trace_of_their_own(binding):
    """Plugin on, a2a-sdk's spans on (docs/a2a.md, "a2a-sdk's own spans"): our SERVER span continues
    the caller's trace (child of the CLIENT span: the collector's callee entry span) and every
    a2a-sdk span the request handler makes (handler, event queues, the agent run) is below it;
    a2a-sdk's dispatcher spans, started before the handler from a context without the caller's
    ``traceparent``, remain one root trace of their own per send, as without the plugin."""
    for streaming, spans in sends("on", True, binding).items():
        app = named(spans, "app")
        client = named(spans, "invoke_agent echo")
        ours = named(spans, "SendStreamingMessage" if streaming else "SendMessage")
        assert ours["parent"] == client["span"] and client["parent"] == app["span"]
        apart = [s for s in spans if s["trace"] != app["trace"]]
        assert {s["name"].rsplit(".", 1)[1] for s in apart} == DISPATCHER[binding, streaming], streaming
        assert all("Dispatcher." in s["name"] for s in apart)
        assert len({s["trace"] for s in apart}) == 1 and sum(s["parent"] is None for s in apart) == 1
        in_trace = [s for s in spans if s["trace"] == app["trace"]]
        assert [s["name"] for s in in_trace if s["parent"] is None] == ["app"]
        assert {s["parent"] for s in in_trace} - {None} <= {s["span"] for s in in_trace}  # no dangling parent
        assert sum(s["scope"] == "a2a-python-sdk" and s["name"].startswith("a2a.server.") for s in in_trace) > 20
        if not streaming:
            handler = named(spans, "DefaultRequestHandlerV2.on_message_send")
            assert handler["parent"] == ours["span"]


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
