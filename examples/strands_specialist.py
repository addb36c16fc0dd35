"""A Strands Agents agent served over A2A (Strands' ``A2AServer``, a2a-sdk 0.3, uvicorn) on
127.0.0.1. No tracing code of its own: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=strands-specialist opentelemetry-instrument python examples/strands_specialist.py \
        --port 9131 --shape session

One Agent per contextId (``agent_factory``), at most ``--max-contexts`` of them in memory (Strands'
LRU; default 1). ``--shape``:
  - ``session``: each Agent on a ``FileSessionManager(session_id=contextId)``: an Agent rebuilt
    after eviction restores the context's messages, and continues.
  - ``memory``: no session manager: an evicted context's Agent is rebuilt empty, and forgets.

Replicas behind a load balancer: ``--public-url`` (the balancer's URL, in the Agent Card) and
``--storage DIR`` (the session files' directory, default a new temporary one), shared by the
replicas as a load-balanced deployment shares its session store.

Ground truth: per model call, how many messages the model was given, as JSON lines
``{"trace_id", "messages", "conversation_id"}`` appended to ``--truth PATH``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvicorn
from offline_strands import OfflineModel
from opentelemetry import trace
from strands import Agent
from strands.multiagent.a2a import A2AServer
from strands.session.file_session_manager import FileSessionManager

SHAPES = ("session", "memory")


class TruthModel(OfflineModel):
    """The offline model, recording how many messages it saw in the current trace."""

    def __init__(self, truth: str | None, context_id: str) -> None:
        super().__init__()
        self.truth, self.context_id = truth, context_id

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        if self.truth:
            trace_id = format(trace.get_current_span().get_span_context().trace_id, "032x")
            record = {"trace_id": trace_id, "messages": len(messages), "conversation_id": self.context_id}
            with open(self.truth, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        async for event in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield event


def factory(name: str, shape: str, truth: str | None, storage: str | None = None):
    storage = storage or tempfile.mkdtemp(prefix=f"{name}-sessions-")

    def build(context_id: str) -> Agent:
        manager = FileSessionManager(session_id=context_id, storage_dir=storage) if shape == "session" else None
        return Agent(
            name=name.replace("-", "_"),
            description="Answers questions (offline, Strands Agents).",
            model=TruthModel(truth, context_id),
            callback_handler=None,
            session_manager=manager,
        )

    return build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default="strands-specialist")
    parser.add_argument("--shape", choices=SHAPES, default="session")
    parser.add_argument("--max-contexts", type=int, default=1)
    parser.add_argument("--truth", help="append the messages seen per model call to this file")
    parser.add_argument("--storage", help="session: the FileSessionManager directory (replicas share one)")
    parser.add_argument("--public-url", help="the URL its Agent Card gives (a load balancer's, before replicas)")
    args = parser.parse_args()
    server = A2AServer(
        agent_factory=factory(args.name, args.shape, args.truth, args.storage),
        host="127.0.0.1",
        port=args.port,
        max_contexts=args.max_contexts,
        enable_a2a_compliant_streaming=True,
        http_url=args.public_url,
    )
    uvicorn.run(server.to_starlette_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
