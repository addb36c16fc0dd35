"""Serving an a2a-sdk ``AgentExecutor`` on 127.0.0.1 (Agent Card and JSON-RPC routes, uvicorn), and
the ground-truth record every example specialist writes. No agent framework imported: the
specialists of every framework (``specialist.py``, ``adk_specialist.py``,
``pydantic_ai_specialist.py``, ``charge_specialist.py``) share it, whichever venv they run in.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager

import uvicorn
from a2a.helpers.proto_helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from opentelemetry import metrics, trace
from starlette.applications import Starlette

DESCRIPTION = "Answers weather questions (offline)."


def write_truth(path: str | None, messages: int, conversation_id: str | None) -> None:
    """Append ``{"trace_id", "messages", "conversation_id"}`` (the trace id of the current span) as
    one JSON line to ``path`` (nothing when ``path`` is None or empty). Raises OSError."""
    if path:
        ctx = trace.get_current_span().get_span_context()
        with open(path, "a", encoding="utf-8") as out:
            out.write(
                json.dumps(
                    {"trace_id": format(ctx.trace_id, "032x"), "messages": messages, "conversation_id": conversation_id}
                )
                + "\n"
            )


class ReplyExecutor(AgentExecutor):
    """Answers each request with one text message in the request's contextId, after recording in
    ``truth`` how many messages its model saw. Subclasses implement :meth:`reply`; ``keep``: whether
    the agent is given the contextId's earlier conversation."""

    def __init__(self, keep: bool, truth: str | None) -> None:
        self.keep, self.truth = keep, truth

    async def reply(self, context) -> tuple[str, int, str | None]:
        """``(text, messages the model saw, conversation id)`` for one request."""
        raise NotImplementedError

    async def execute(self, context, event_queue) -> None:
        text, messages, conversation_id = await self.reply(context)
        write_truth(self.truth, messages, conversation_id)
        await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


@asynccontextmanager
async def flush_at_shutdown(app: Starlette):
    """Starlette lifespan: at shutdown, flush the SDK's tracer and meter providers. uvicorn (0.29 and
    later: ``Server.capture_signals``) re-raises the SIGTERM it handled after its graceful shutdown,
    so the process dies by the signal and the SDK's exit-time flush never runs: spans of the last
    5 s batch delay would be lost (the hop then ``no_callee``/``unresolved``)."""
    yield
    for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
        flush = getattr(provider, "force_flush", None)  # the SDK's; the API's no-op providers have none
        if flush is not None:
            await asyncio.to_thread(flush)


def executor_app(
    executor: AgentExecutor,
    url: str,
    name: str,
    description: str = DESCRIPTION,
    binding: str = "JSONRPC",
    v03: bool = False,
) -> Starlette:
    """The Starlette app serving ``executor`` (Agent Card routes, and JSON-RPC at ``url`` or, with
    ``binding="HTTP+JSON"``, the REST routes). ``v03``: A2A 0.3 served too (a2a-sdk 1.x's
    ``enable_v0_3_compat``, and a 0.3 interface in the card, whose legacy fields 0.3 clients read)."""
    interfaces = [AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")]
    if v03:
        interfaces.append(AgentInterface(url=url, protocol_binding=binding, protocol_version="0.3"))
    card = AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="weather", name="weather", description="weather", tags=["weather"])],
    )
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    if binding == "HTTP+JSON":
        routes = create_rest_routes(handler, enable_v0_3_compat=v03)
    else:
        routes = create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=v03)
    return Starlette(routes=[*create_agent_card_routes(card), *routes], lifespan=flush_at_shutdown)


def serve(executor: AgentExecutor, name: str, port: int, description: str = DESCRIPTION, v03: bool = False) -> None:
    """Serve ``executor`` on 127.0.0.1:``port`` until stopped (``v03``: A2A 0.3 too, see
    :func:`executor_app`); prints ``ready <url>`` once listening."""
    url = f"http://127.0.0.1:{port}/"
    # keep-alive above httpx's 5 s idle expiry: at realistic latency a caller sends again ~6 s
    # later, and uvicorn's default (5 s) races it (the server closes as the request goes out)
    config = uvicorn.Config(
        executor_app(executor, url, name, description, v03=v03),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    original_startup = server.startup

    async def startup(sockets=None):
        await original_startup(sockets)
        print(f"ready {url}", flush=True)

    server.startup = startup
    server.run()
