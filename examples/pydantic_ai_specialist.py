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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from a2a_serve import ReplyExecutor, serve
from offline_pydantic_ai import echo_model, seen

from pydantic_ai import Agent

SHAPES = ("history", "forgetful")


class PydanticAIExecutor(ReplyExecutor):
    """Runs the agent per request; ``keep``: with the contextId's earlier messages."""

    def __init__(self, agent: Agent, keep: bool, truth: str | None) -> None:
        super().__init__(keep, truth)
        self.agent = agent
        self.history: dict[str, list] = {}

    async def reply(self, context) -> tuple[str, int, str]:
        history = self.history.get(context.context_id) if self.keep else None
        result = await self.agent.run(context.get_user_input(), message_history=history)
        self.history[context.context_id] = result.all_messages()
        return result.output, seen(result.output), result.conversation_id


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
    executor = PydanticAIExecutor(
        Agent(echo_model(), name=args.name.replace("-", "_")), keep=args.shape == "history", truth=args.truth
    )
    serve(executor, args.name, args.port, "Answers weather questions (offline, Pydantic AI).")


if __name__ == "__main__":
    main()
