"""One process, a real a2a-sdk server on 127.0.0.1 (uvicorn, in a thread) and a real client: sends
one message non-streaming, then one streaming, each under an application span ``app``, and prints
every finished span of each send as one JSON line ``[{name, kind, scope, trace, span, parent}]``.

    python sdk_spans_app.py --plugin on|off [--binding JSONRPC|HTTP+JSON]

a2a-sdk's own spans follow ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED`` (read when a2a-sdk is first
imported). ``--plugin on`` instruments before a2a-sdk is imported and the app built, as
``opentelemetry-instrument`` does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", choices=("on", "off"), required=True)
    parser.add_argument("--binding", default="JSONRPC")
    args = parser.parse_args()
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if args.plugin == "on":
        from otel_agent_identity import AgentIdentityInstrumentor

        AgentIdentityInstrumentor().instrument(tracer_provider=provider)

    import httpx
    import uvicorn
    from a2a.client import ClientConfig, create_client
    from a2a.types import Message, Part, Role, SendMessageRequest
    from a2a_serve import ReplyExecutor, executor_app

    class Echo(ReplyExecutor):
        async def reply(self, context):
            return "ok", 1, context.context_id

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    app = executor_app(Echo(False, None), url, "echo", binding=args.binding)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)

    async def send(streaming: bool) -> None:
        async with httpx.AsyncClient() as http:
            config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[args.binding])
            client = await create_client(url, client_config=config)
            message = Message(role=Role.ROLE_USER, parts=[Part(text="hi")], message_id=f"m-{streaming}")
            with trace.get_tracer("app").start_as_current_span("app"):
                async for _ in client.send_message(SendMessageRequest(message=message)):
                    pass

    for streaming in (False, True):
        exporter.clear()
        asyncio.run(send(streaming))
        # the server's last spans end after the response is sent: wait, bounded, for the handler's
        # span (a2a-sdk's, ours or neither) and then for the count to stay put
        seen, deadline = -1, time.monotonic() + 10
        while time.monotonic() < deadline and len(exporter.get_finished_spans()) != seen:
            seen = len(exporter.get_finished_spans())
            time.sleep(0.3)
        spans = [
            {
                "name": s.name,
                "kind": s.kind.name,
                "scope": s.instrumentation_scope.name,
                "trace": format(s.context.trace_id, "032x"),
                "span": format(s.context.span_id, "016x"),
                "parent": format(s.parent.span_id, "016x") if s.parent else None,
            }
            for s in exporter.get_finished_spans()
        ]
        print(json.dumps(spans), flush=True)
    server.should_exit = True


if __name__ == "__main__":
    main()
