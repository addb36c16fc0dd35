"""A payment specialist served over A2A on 127.0.0.1: an a2a-sdk ``AgentExecutor`` whose work is one
LangGraph run (a graph with one node, ``charge``), the callee of the recovery scenario
(``checkout_orchestrator.py``, ``tests/collector/test_collector_recovery.py``, the demo).

- naive (default): every request runs the graph, so a retried delegation charges again;
- ``--idempotent``: keeps a ledger keyed by the caller's delegation id, read with
  ``otel_agent_identity.upstream()`` (the caller must allowlist this server:
  ``OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST``). A delegation already in the ledger is
  answered with the stored result and the graph does not run again.
- ``--by-order``: the same ledger keyed by the order (the message text, a business key), for
  callers that allowlist nothing (the default): a retry from a new process is replayed too.

``--hold SECONDS`` holds the response of the first request that long after the work completed
(a slow network, a lost response: the caller times out although the charge happened);
``--hold-each``: every request's response (a slow callee: ``tests/collector/test_collector_cancelled_send.py``).
``--record PATH``: the ground truth, one JSON line per charge the graph really made:
``{"execution", "delegation", "trace_id"}`` (``execution``: the graph run's ``agent_identity.execution.id``,
here the LangGraph ``run_id`` the executor passes). No other tracing code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=payments opentelemetry-instrument python examples/charge_specialist.py \
        --port 9102 --idempotent --hold 3
Prints ``ready <url>`` on stdout once it accepts requests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a_serve import serve
from langgraph.graph import END, START, StateGraph
from opentelemetry import trace

import otel_agent_identity


class Charge(TypedDict, total=False):
    order: str
    receipt: str


def build_graph(record: str | None):
    """One node, ``charge``: the business effect. Appends to ``record`` each time it really runs."""

    async def charge(state: Charge) -> Charge:
        receipt = f"receipt-{uuid.uuid4().hex[:8]} for {state['order']}"
        if record:
            up, scope = otel_agent_identity.upstream(), otel_agent_identity.current_scope()
            ctx = trace.get_current_span().get_span_context()
            with open(record, "a", encoding="utf-8") as out:
                out.write(
                    json.dumps(
                        {
                            "execution": scope and scope.execution_id,
                            "delegation": up and up.delegation_id,
                            "trace_id": format(ctx.trace_id, "032x"),
                        }
                    )
                    + "\n"
                )
        return {"receipt": receipt}

    graph = StateGraph(Charge)
    graph.add_node("charge", charge)
    graph.add_edge(START, "charge")
    graph.add_edge("charge", END)
    return graph.compile(name="charge_graph")


class ChargeExecutor(AgentExecutor):
    """Runs the charge graph per request; ``idempotent``: once per delegation (the ledger)."""

    def __init__(
        self, record: str | None, idempotent: bool, hold: float, hold_each: bool = False, by_order: bool = False
    ) -> None:
        self.graph = build_graph(record)
        self.by_order = by_order
        self.idempotent, self.hold, self.hold_each = idempotent, hold, hold_each
        # delegation id -> receipt. In production: durable storage, keyed by (the authenticated
        # caller, delegation id): the id is the caller's claim, never a credential.
        self.ledger: dict[str, str] = {}
        self.requests = 0

    async def execute(self, context, event_queue) -> None:
        self.requests += 1
        first = self.requests == 1
        up = otel_agent_identity.upstream()
        key = up.delegation_id if self.idempotent and up is not None else None
        if self.by_order:  # the business key: nothing need be forwarded
            key = f"order:{get_message_text(context.message)}"
        receipt = self.ledger.get(key) if key else None
        if receipt is None:  # the work: one LangGraph run
            result = await self.graph.ainvoke({"order": get_message_text(context.message)}, {"run_id": uuid.uuid4()})
            receipt = result["receipt"]
            if key:
                self.ledger[key] = receipt
        if (first or self.hold_each) and self.hold:
            await asyncio.sleep(self.hold)  # the charge is done; the response is late
        await event_queue.enqueue_event(new_text_message(receipt, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="payments")
    parser.add_argument("--idempotent", action="store_true", help="a ledger keyed by the delegation id")
    parser.add_argument("--hold", type=float, default=0.0, help="hold the first response this many seconds")
    parser.add_argument("--hold-each", action="store_true", help="hold every response, not only the first")
    parser.add_argument(
        "--by-order", action="store_true", help="a ledger keyed by the order (the business key), no allowlist needed"
    )
    parser.add_argument("--record", help="append one JSON line per charge made to this file")
    args = parser.parse_args()
    serve(
        ChargeExecutor(args.record, args.idempotent, args.hold, args.hold_each, args.by_order),
        args.name,
        args.port,
        "Charges orders (offline).",
    )


if __name__ == "__main__":
    main()
