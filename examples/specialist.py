"""A specialist agent served over A2A on 127.0.0.1: Agent Framework ``Agent`` (offline, local
history) behind ``A2AExecutor``, JSON-RPC routes of a2a-sdk, run by uvicorn. No tracing code of its
own: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=specialist opentelemetry-instrument python examples/specialist.py --port 9101

``A2AExecutor`` creates the agent's session with ``session_id = contextId``, so the agent reports
the A2A contextId it was asked to continue. ``--forgetful`` serves an agent that ignores that id
and starts a new session (a new conversation) on every request; it still answers within the
caller's contextId, so nothing on the wire shows the break: only the telemetry does.
Prints ``ready <url>`` on stdout once it accepts requests.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvicorn  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore  # noqa: E402
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill  # noqa: E402
from agent_framework import Agent, AgentSession  # noqa: E402
from agent_framework.a2a import A2AExecutor  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from offline_chat import OfflineChatClient  # noqa: E402


class ForgetfulAgent(Agent):
    """Drops the session id it is given: every request becomes a new conversation."""

    def create_session(self, *, session_id: str | None = None, **kwargs) -> AgentSession:
        return super().create_session(**kwargs)


def build_app(url: str, name: str, forgetful: bool = False, stream: bool = False) -> Starlette:
    """The Starlette app of one specialist (``url``: its public JSON-RPC URL)."""
    agent_cls = ForgetfulAgent if forgetful else Agent
    agent = agent_cls(client=OfflineChatClient(mode="local", prefix=name), name=name)
    card = AgentCard(
        name=name,
        description="Answers weather questions (offline).",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="weather", name="weather", description="weather", tags=["weather"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=A2AExecutor(agent, stream=stream), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default=None)
    parser.add_argument("--forgetful", action="store_true")
    parser.add_argument("--stream", action="store_true", help="run the agent streaming")
    args = parser.parse_args()
    name = args.name or ("forgetful-specialist" if args.forgetful else "specialist")
    url = f"http://127.0.0.1:{args.port}/"
    config = uvicorn.Config(
        build_app(url, name, args.forgetful, args.stream), host="127.0.0.1", port=args.port, log_level="warning"
    )
    server = uvicorn.Server(config)
    original_startup = server.startup

    async def startup(sockets=None):
        await original_startup(sockets)
        print(f"ready {url}", flush=True)

    server.startup = startup
    server.run()


if __name__ == "__main__":
    main()
