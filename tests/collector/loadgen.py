# SPDX-License-Identifier: Apache-2.0
"""Agent-shaped traces at a fixed rate, for the reliability tests (test_reliability*.py).

One process plays both services of sender.py's shape, 5 spans a trace: ``orchestrator`` (an
``invoke_agent`` INTERNAL span with conversation ``conv-<run>-<i>``, below it the A2A send: a CLIENT
``invoke_agent`` span with ``gen_ai.conversation.id`` = the contextId sent, a delegation and an
execution id) and ``specialist`` (SERVER span child of the client span, its ``invoke_agent`` span with
the same conversation, resumed: every hop is ``continued``, and a chat span). Each service has its own
TracerProvider and a BatchSpanProcessor over the SDK's OTLP/HTTP exporter, with its retries
(``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`` bounds them).

Ground truth written to ``--out`` (JSON): every span created and every span the exporter
acknowledged (its export returned SUCCESS), as ``[trace_id, span_id]`` hex pairs, and every
conversation, execution and delegation id used (``ids``).
``--rates 20:5,200:5`` sends 20 traces/s for 5 s, then 200/s for 5 s (``--traces`` is ignored then).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

CONV = "gen_ai.conversation.id"
REQUESTED = "agent_identity.conversation.requested_id"  # a later turn: the contextId asked to continue
ANSWERED_BEFORE = "agent_identity.conversation.answered_before"  # ... in which the caller was answered before
RESUMED = "agent_identity.conversation.resumed"  # the callee's agent resumed it (else: state_unknown)
OP = "gen_ai.operation.name"
AGENT = "gen_ai.agent.name"
EXECUTION = "agent_identity.execution.id"
DELEGATION = "agent_identity.delegation.id"
SPANS_PER_TRACE = 5


class AckingExporter(SpanExporter):
    """The OTLP exporter, recording which spans it delivered (SUCCESS) and how many it gave up on."""

    def __init__(self, inner: SpanExporter, acked: list, lock: threading.Lock) -> None:
        self.inner, self.acked, self.lock, self.failed = inner, acked, lock, 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        with self.lock:
            if result is SpanExportResult.SUCCESS:
                self.acked.extend([f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}"] for s in spans)
            else:
                self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def _provider(service: str, endpoint: str, acked: list, lock: threading.Lock) -> tuple[TracerProvider, AckingExporter]:
    exporter = AckingExporter(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces"), acked, lock)
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_queue_size=100_000, schedule_delay_millis=200, max_export_batch_size=256)
    )
    return provider, exporter


def one_trace(orch: trace.Tracer, spec: trace.Tracer, conv: str, created: list, ids: list, payload: str = "") -> None:
    execution, callee_execution, delegation = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
    ids.extend((conv, execution, callee_execution, delegation))
    with (
        orch.start_as_current_span(
            "invoke_agent orchestrator",
            attributes={OP: "invoke_agent", AGENT: "orchestrator", CONV: conv, EXECUTION: execution},
        ) as root,
        orch.start_as_current_span(
            "invoke_agent specialist",
            kind=trace.SpanKind.CLIENT,
            attributes={
                OP: "invoke_agent",
                AGENT: "specialist",
                CONV: conv,
                REQUESTED: conv,
                ANSWERED_BEFORE: True,
                EXECUTION: execution,
                DELEGATION: delegation,
            },
        ) as client,
        spec.start_as_current_span("POST /", kind=trace.SpanKind.SERVER) as server,
        spec.start_as_current_span(
            "invoke_agent specialist",
            attributes={
                OP: "invoke_agent",
                AGENT: "specialist",
                CONV: conv,
                EXECUTION: callee_execution,
                RESUMED: True,
            },
        ) as agent,
    ):
        chat_attrs = {OP: "chat", "gen_ai.input.messages": payload} if payload else {OP: "chat"}
        with spec.start_as_current_span("chat model", kind=trace.SpanKind.CLIENT, attributes=chat_attrs) as chat:
            pass
    created.extend(
        [f"{s.get_span_context().trace_id:032x}", f"{s.get_span_context().span_id:016x}"]
        for s in (root, client, server, agent, chat)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--endpoint", required=True, help="OTLP/HTTP base URL")
    parser.add_argument("--traces", type=int, default=100)
    parser.add_argument("--rate", type=float, default=20.0, help="traces per second")
    parser.add_argument("--rates", default="", help="steps RATE:SECONDS,... (overrides --traces/--rate)")
    parser.add_argument("--run", default=uuid.uuid4().hex[:8], help="conversation id prefix")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--payload-bytes",
        type=int,
        default=0,
        help="a gen_ai.input.messages attribute of this size on each chat span (prompt-sized spans)",
    )
    args = parser.parse_args()
    steps = (
        [(float(r), float(d)) for r, d in (s.split(":") for s in args.rates.split(","))]
        if args.rates
        else [(args.rate, args.traces / args.rate)]
    )

    payload = "x" * args.payload_bytes
    acked: list = []
    created: list = []
    ids: list = []
    lock = threading.Lock()
    orch_provider, orch_exp = _provider("orchestrator", args.endpoint, acked, lock)
    spec_provider, spec_exp = _provider("specialist", args.endpoint, acked, lock)
    orch, spec = orch_provider.get_tracer("loadgen"), spec_provider.get_tracer("loadgen")
    i, start = 0, time.monotonic()
    sent_per_step = []
    for rate, seconds in steps:
        step_start, n = time.monotonic(), 0
        while (due := step_start + n / rate) < step_start + seconds:
            if (delay := due - time.monotonic()) > 0:
                time.sleep(delay)
            one_trace(orch, spec, f"conv-{args.run}-{i}", created, ids, payload)
            i, n = i + 1, n + 1
        sent_per_step.append(
            {
                "rate": rate,
                "seconds": seconds,
                "traces": n,
                "achieved_rate": n / max(time.monotonic() - step_start, 1e-9),
            }
        )
    sending = time.monotonic() - start
    orch_provider.shutdown()  # flushes: the exporter retries within its timeout
    spec_provider.shutdown()
    with open(args.out, "w") as out:
        json.dump(
            {
                "created": created,
                "acked": acked,
                "ids": ids,
                "failed": orch_exp.failed + spec_exp.failed,
                "steps": sent_per_step,
                "sending_seconds": sending,
                "total_seconds": time.monotonic() - start,
            },
            out,
        )


if __name__ == "__main__":
    main()
