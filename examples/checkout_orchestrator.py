"""A checkout orchestrator for the recovery scenario: a LangGraph graph ``prepare -> charge -> finish``
with a SQLite checkpointer, whose ``charge`` node delegates the payment to a remote specialist over
A2A (a2a-sdk client) inside ``otel_agent_identity.delegation(key="order-42:charge")``.

Run once, it stops at the most uncomfortable point when the specialist's response is late: the
send times out (``--timeout``, default 1 s), the node raises, the process exits with status 3
before ``charge`` is checkpointed. Run again with the same ``--db``, it resumes from the checkpoint
(``prepare`` is not run again) and retries ``charge``: the same delegation key, so the same
``agent_identity.delegation.id``, in a new trace. No other tracing code: run it under the launcher,
allowlisting the specialist so it receives the delegation id (its idempotency key), e.g.

    OTEL_SERVICE_NAME=checkout OTEL_INSTRUMENTATION_AGENT_IDENTITY_ALLOWLIST=http://127.0.0.1:9102/ \
        opentelemetry-instrument python examples/checkout_orchestrator.py \
        --specialist http://127.0.0.1:9102/ --db /tmp/checkout.sqlite

Prints one JSON line on stdout: ``{"resumed", "delegation_id", "receipt", "error", "trace_id"}``
(``resumed``: this process continued a checkpointed run; ``error``: what the send raised).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from typing import TypedDict

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import Message as A2AMessage
from a2a.types import Part, Role, SendMessageRequest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from opentelemetry import trace

import otel_agent_identity

_out: dict = {}


class Checkout(TypedDict, total=False):
    order: str
    prepared: bool
    receipt: str


def build_graph(url: str, timeout: float):
    async def prepare(state: Checkout) -> Checkout:
        return {"prepared": True}

    async def charge(state: Checkout) -> Checkout:
        with otel_agent_identity.delegation(key=f"{state['order']}:charge") as delegation_id:
            _out["delegation_id"] = delegation_id
            ctx = trace.get_current_span().get_span_context()
            _out["trace_id"] = format(ctx.trace_id, "032x")
            async with httpx.AsyncClient(timeout=timeout) as http:
                client = await create_client(url, client_config=ClientConfig(httpx_client=http, streaming=False))
                request = SendMessageRequest(
                    message=A2AMessage(
                        role=Role.ROLE_USER, parts=[Part(text=state["order"])], message_id=uuid.uuid4().hex
                    )
                )
                receipt = ""
                async for event in client.send_message(request):
                    payload = getattr(event, event.WhichOneof("payload"))
                    receipt = " ".join(p.text for p in (getattr(payload, "parts", None) or ()) if p.text) or receipt
        return {"receipt": receipt}

    async def finish(state: Checkout) -> Checkout:
        return {}

    graph = StateGraph(Checkout)
    for name, node in (("prepare", prepare), ("charge", charge), ("finish", finish)):
        graph.add_node(name, node)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "charge")
    graph.add_edge("charge", "finish")
    graph.add_edge("finish", END)
    return graph


async def checkout(url: str, db: str, timeout: float, order: str = "order-42") -> int:
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        graph = build_graph(url, timeout).compile(checkpointer=saver, name="checkout")
        config = {"configurable": {"thread_id": order}}
        state = await graph.aget_state(config)
        resumed = bool(state.next)
        _out.update(resumed=resumed, delegation_id=None, receipt=None, error=None, trace_id=None)
        try:
            result = await graph.ainvoke(None if resumed else {"order": order}, config, durability="sync")
            _out["receipt"] = result.get("receipt")
        except Exception as exc:
            _out["error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(_out), flush=True)
    return 3 if _out["error"] else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specialist", required=True, metavar="URL", help="payment specialist JSON-RPC URL")
    parser.add_argument("--db", required=True, help="SQLite checkpoint file (kept across runs)")
    parser.add_argument("--timeout", type=float, default=1.0, help="A2A client timeout, seconds")
    parser.add_argument("--order", default="order-42", help="the order: LangGraph thread id and delegation key prefix")
    args = parser.parse_args()
    sys.exit(asyncio.run(checkout(args.specialist, args.db, args.timeout, args.order)))


if __name__ == "__main__":
    main()
