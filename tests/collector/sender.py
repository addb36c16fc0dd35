# SPDX-License-Identifier: Apache-2.0
"""Two instrumented processes for the collector end-to-end tests.

Plain OpenTelemetry SDK + OTLP/HTTP, spans shaped like the instrumentation's:

- ``caller`` (service A): an ``invoke_agent`` INTERNAL span with its own
  conversation, and below it the A2A send: a CLIENT ``invoke_agent`` span
  carrying ``gen_ai.conversation.id`` and ``agent_identity.conversation.requested_id`` = the
  contextId it sends (none on a first turn) and an ``agent_identity.delegation.id``. It starts the ``callee``
  as a second process and hands it the W3C traceparent in ``TRACEPARENT``.
- ``callee`` (service B): per attempt (``--attempts``: one server process executing a re-sent
  delegation again, as a specialist does when a client retries), a SERVER span (child of the client
  span) and below it its agent's ``invoke_agent`` span (a new execution id) with the conversation it
  actually used, declaring it resumed that conversation's state (``resumed``: without it the hop
  gets no state verdict), and a chat span without a conversation id (a backfill target).

``--lose-traceparent`` withholds the traceparent: the callee's spans form a trace of their own.
Spans are exported as they end, so the callee's arrive first and the caller's as soon as the callee
process has exited (no process start lies between a trace's first and last span, so a trace stays
whole within groupbytrace's wait even on a loaded machine); ``--linger`` delays the caller's past
that wait to produce a fragmented trace. The caller prints the trace id (hex).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagate import extract, inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

CONV = "gen_ai.conversation.id"
OP = "gen_ai.operation.name"
AGENT = "gen_ai.agent.name"
EXECUTION = "agent_identity.execution.id"
DELEGATION = "agent_identity.delegation.id"
REQUESTED = "agent_identity.conversation.requested_id"
ANSWERED_BEFORE = "agent_identity.conversation.answered_before"
RESUMED = "agent_identity.conversation.resumed"


def _tracer(service: str, endpoint: str) -> tuple[TracerProvider, trace.Tracer]:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
    return provider, provider.get_tracer("agent-identity-e2e")


def caller(args: argparse.Namespace) -> None:
    provider, tracer = _tracer(args.service, args.endpoint)
    execution = uuid.uuid4().hex
    with tracer.start_as_current_span(
        f"invoke_agent {args.service}",
        kind=trace.SpanKind.INTERNAL,
        attributes={OP: "invoke_agent", AGENT: args.service, CONV: args.conversation, EXECUTION: execution},
    ) as root:
        attrs = {OP: "invoke_agent", AGENT: args.callee_service, EXECUTION: execution, DELEGATION: uuid.uuid4().hex}
        if args.context_id:
            attrs[CONV] = attrs[REQUESTED] = args.context_id
            # a later turn: this caller received an answer in that context before
            attrs[ANSWERED_BEFORE] = not args.first_in_context
        with tracer.start_as_current_span(
            f"invoke_agent {args.callee_service}", kind=trace.SpanKind.CLIENT, attributes=attrs
        ):
            carrier: dict[str, str] = {}
            inject(carrier)
            # --lose-traceparent: the callee gets no trace context and starts a new trace
            env = dict(os.environ, TRACEPARENT="" if args.lose_traceparent else carrier["traceparent"])
            cmd = [
                sys.executable,
                __file__,
                "callee",
                "--service",
                args.callee_service,
                "--endpoint",
                args.endpoint,
                "--conversation",
                args.callee_conversation,
                "--attempts",
                str(args.attempts),
            ]
            subprocess.run(cmd, env=env, check=True)
            time.sleep(args.linger)  # caller spans end (and are sent) this much later
        trace_id = root.get_span_context().trace_id
    provider.shutdown()
    print(f"{trace_id:032x}")


def callee(args: argparse.Namespace) -> None:
    provider, tracer = _tracer(args.service, args.endpoint)
    ctx = extract({"traceparent": os.environ["TRACEPARENT"]} if os.environ.get("TRACEPARENT") else {})
    for _ in range(args.attempts):  # each request executed anew: its own execution id
        with tracer.start_as_current_span("POST /", context=ctx, kind=trace.SpanKind.SERVER):
            attrs = {OP: "invoke_agent", AGENT: args.service, EXECUTION: uuid.uuid4().hex, RESUMED: True}
            if args.conversation:
                attrs[CONV] = args.conversation
            with (
                tracer.start_as_current_span(f"invoke_agent {args.service}", attributes=attrs),
                tracer.start_as_current_span("chat model", kind=trace.SpanKind.CLIENT, attributes={OP: "chat"}),
            ):
                pass
    provider.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("role", choices=["caller", "callee"])
    parser.add_argument("--service", required=True)
    parser.add_argument("--endpoint", required=True, help="OTLP/HTTP base URL")
    parser.add_argument("--conversation", default="", help="this agent's own conversation id")
    parser.add_argument("--context-id", default="", help="caller: contextId sent to the callee")
    parser.add_argument("--callee-service", default="specialist")
    parser.add_argument("--callee-conversation", default="", help="conversation the callee uses")
    parser.add_argument("--attempts", type=int, default=1, help="sends of one delegation (the callee executes each)")
    parser.add_argument(
        "--first-in-context",
        type=int,
        default=0,
        help="caller: 1 = the contextId is client-minted, never answered before (answered_before=false)",
    )
    parser.add_argument(
        "--linger", type=float, default=0.0, help="caller: seconds to wait after the callee before ending its spans"
    )
    parser.add_argument(
        "--lose-traceparent",
        type=int,
        default=0,
        help="caller: 1 = do not pass trace context (the callee starts a new trace)",
    )
    args = parser.parse_args()
    (caller if args.role == "caller" else callee)(args)


if __name__ == "__main__":
    main()
