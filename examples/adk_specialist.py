"""A Google ADK agent served over A2A on 127.0.0.1 (a2a-sdk JSON-RPC routes, uvicorn). No tracing
code of its own: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=adk-specialist opentelemetry-instrument python examples/adk_specialist.py \
        --port 9121 --shape session

``--shape``:
  - ``session``: one ADK session per contextId (``session_id=contextId``): the agent continues.
  - ``forgetful``: answers in the request's contextId but runs every request in a new session:
    the agent starts from nothing each time.

Ground truth: per request, how many contents the model was given, as JSON lines
``{"trace_id", "messages", "conversation_id"}`` appended to ``--truth PATH`` (1, 3, 5 when it
continues; 1, 1, 1 when it forgets). Prints ``ready <url>`` on stdout once it accepts requests.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvicorn  # noqa: E402
from a2a.helpers.proto_helpers import new_text_message  # noqa: E402
from a2a.server.agent_execution import AgentExecutor  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry import trace  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from offline_adk import OfflineLlm, seen  # noqa: E402

SHAPES = ("session", "forgetful")


class ADKExecutor(AgentExecutor):
    """Runs the agent per request, in the contextId's session (``keep``) or in a new one."""

    def __init__(self, runner: Runner, keep: bool, truth: str | None) -> None:
        self.runner, self.keep, self.truth = runner, keep, truth

    async def execute(self, context, event_queue) -> None:
        session_id = context.context_id if self.keep else uuid.uuid4().hex
        message = types.Content(role="user", parts=[types.Part(text=context.get_user_input())])
        text = ""
        async for event in self.runner.run_async(user_id="a2a", session_id=session_id, new_message=message):
            if event.content and event.content.parts and event.content.parts[0].text:
                text = event.content.parts[0].text
        if self.truth:
            ids = trace.get_current_span().get_span_context()
            with open(self.truth, "a", encoding="utf-8") as out:
                out.write(json.dumps({"trace_id": format(ids.trace_id, "032x"), "messages": seen(text),
                                      "conversation_id": session_id}) + "\n")
        await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))

    async def cancel(self, context, event_queue) -> None:
        return None


def build_app(url: str, name: str, shape: str, truth: str | None) -> Starlette:
    """The Starlette app of one specialist (``url``: its public JSON-RPC URL)."""
    card = AgentCard(
        name=name, description="Answers weather questions (offline, Google ADK).", version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="weather", name="weather", description="weather", tags=["weather"])],
    )
    agent = LlmAgent(name=name.replace("-", "_"), model=OfflineLlm())
    runner = Runner(app_name=name, agent=agent, session_service=InMemorySessionService(), auto_create_session=True)
    executor = ADKExecutor(runner, keep=shape == "session", truth=truth)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="adk-specialist")
    parser.add_argument("--shape", choices=SHAPES, default="session")
    parser.add_argument("--truth", help="append the messages seen per request to this file")
    args = parser.parse_args()
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
