"""A Pydantic AI agent served over A2A on 127.0.0.1 (a2a-sdk JSON-RPC routes, uvicorn). No tracing
code of its own: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=pa-specialist opentelemetry-instrument python examples/pydantic_ai_specialist.py \
        --port 9111 --shape history

``--shape``:
  - ``history``: keeps each contextId's messages and passes them as ``message_history``: the
    agent continues the conversation (its ``conversation_id`` comes back with the history).
  - ``forgetful``: answers in the request's contextId but runs the agent without the earlier
    messages: a new Pydantic AI conversation, and no state, on every request.
``--native``: Pydantic AI's own instrumentation on (``Agent.instrument_all()``).

Ground truth: per request, how many messages the model was given, as JSON lines
``{"trace_id", "messages", "conversation_id"}`` appended to ``--truth PATH`` (1, 3, 5 when it
continues; 1, 1, 1 when it forgets). Prints ``ready <url>`` on stdout once it accepts requests.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvicorn  # noqa: E402
from a2a.helpers.proto_helpers import new_text_message  # noqa: E402
from a2a.server.agent_execution import AgentExecutor  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from opentelemetry import trace  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from offline_pydantic_ai import echo_model, seen  # noqa: E402

SHAPES = ("history", "forgetful")


class PydanticAIExecutor(AgentExecutor):
    """Runs the agent per request; ``keep``: with the contextId's earlier messages."""

    def __init__(self, agent: Agent, keep: bool, truth: str | None) -> None:
        self.agent, self.keep, self.truth = agent, keep, truth
        self.history: dict[str, list] = {}

    async def execute(self, context, event_queue) -> None:
        history = self.history.get(context.context_id) if self.keep else None
        result = await self.agent.run(context.get_user_input(), message_history=history)
        self.history[context.context_id] = result.all_messages()
        if self.truth:
            ids = trace.get_current_span().get_span_context()
            with open(self.truth, "a", encoding="utf-8") as out:
                out.write(json.dumps({"trace_id": format(ids.trace_id, "032x"), "messages": seen(result.output),
                                      "conversation_id": result.conversation_id}) + "\n")
        await event_queue.enqueue_event(new_text_message(result.output, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


def build_app(url: str, name: str, shape: str, truth: str | None) -> Starlette:
    """The Starlette app of one specialist (``url``: its public JSON-RPC URL)."""
    card = AgentCard(
        name=name, description="Answers weather questions (offline, Pydantic AI).", version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="weather", name="weather", description="weather", tags=["weather"])],
    )
    agent = Agent(echo_model(), name=name.replace("-", "_"))
    executor = PydanticAIExecutor(agent, keep=shape == "history", truth=truth)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="pa-specialist")
    parser.add_argument("--shape", choices=SHAPES, default="history")
    parser.add_argument("--truth", help="append the messages seen per request to this file")
    parser.add_argument("--native", action="store_true", help="Pydantic AI's own instrumentation on")
    args = parser.parse_args()
    if args.native:
        Agent.instrument_all()
    url = f"http://127.0.0.1:{args.port}/"
    server = uvicorn.Server(uvicorn.Config(build_app(url, args.name, args.shape, args.truth), host="127.0.0.1",
                                           port=args.port, log_level="warning"))
    original_startup = server.startup

    async def startup(sockets=None):
        await original_startup(sockets)
        print(f"ready {url}", flush=True)

    server.startup = startup
    server.run()


if __name__ == "__main__":
    main()
