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
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a_serve import ReplyExecutor, serve
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from offline_adk import OfflineLlm, seen

SHAPES = ("session", "forgetful")


class ADKExecutor(ReplyExecutor):
    """Runs the agent per request, in the contextId's session (``keep``) or in a new one."""

    def __init__(self, runner: Runner, keep: bool, truth: str | None) -> None:
        super().__init__(keep, truth)
        self.runner = runner

    async def reply(self, context) -> tuple[str, int, str]:
        session_id = context.context_id if self.keep else uuid.uuid4().hex
        message = types.Content(role="user", parts=[types.Part(text=context.get_user_input())])
        text = ""
        async for event in self.runner.run_async(user_id="a2a", session_id=session_id, new_message=message):
            if event.content and event.content.parts and event.content.parts[0].text:
                text = event.content.parts[0].text
        return text, seen(text), session_id


def build_executor(name: str, shape: str, truth: str | None) -> ADKExecutor:
    """The executor of one specialist: an ``LlmAgent`` on the offline model, run by a ``Runner``."""
    agent = LlmAgent(name=name.replace("-", "_"), model=OfflineLlm())
    runner = Runner(app_name=name, agent=agent, session_service=InMemorySessionService(), auto_create_session=True)
    return ADKExecutor(runner, keep=shape == "session", truth=truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="adk-specialist")
    parser.add_argument("--shape", choices=SHAPES, default="session")
    parser.add_argument("--truth", help="append the messages seen per request to this file")
    args = parser.parse_args()
    serve(
        build_executor(args.name, args.shape, args.truth),
        args.name,
        args.port,
        "Answers weather questions (offline, Google ADK).",
    )


if __name__ == "__main__":
    main()
