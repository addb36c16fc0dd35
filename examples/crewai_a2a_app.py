"""A CrewAI application delegating over A2A with CrewAI's own client
(``crewai.a2a.utils.delegation.execute_a2a_delegation``, a2a-sdk 0.3, as ``crewai[a2a]`` pins it),
several turns per remote agent: turn 1 sends no contextId (the server names the context), later
turns send the contextId the last reply came in (``context_id=``), as a client continuing a
conversation does. Each send runs inside the application's request span (``request <callee>``),
the way a web handler's span would hold it. No other tracing code: run it under the launcher, e.g.

    OTEL_SERVICE_NAME=crewai-app opentelemetry-instrument python examples/crewai_a2a_app.py \
        --callee strands=http://127.0.0.1:9131/ --turns 2 --out sends.jsonl

``--callee NAME=URL[,URL2...]`` (repeat): one conversation per callee, turns interleaved; several
URLs are replicas of one agent, the turns alternate between them. Writes one JSON line per send to
``--out PATH`` (CrewAI prints its own panels on stdout, from other threads):
``{"callee", "turn", "requested", "answered", "result", "trace_id"}`` (``requested``: the contextId
sent, null on turn 1; ``answered``: the one the reply came in).
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # CrewAI's phone-home
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai.a2a.utils.delegation import execute_a2a_delegation
from opentelemetry import trace

TRACER = trace.get_tracer("crewai-a2a-app")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callee", action="append", required=True, metavar="NAME=URL")
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--out", required=True, help="append one JSON line per send to this file")
    args = parser.parse_args()
    callees = dict(spec.split("=", 1) for spec in args.callee)
    contexts: dict[str, str | None] = {}
    for turn in range(1, args.turns + 1):
        for name, urls in callees.items():
            replicas = urls.split(",")
            requested = contexts.get(name)
            with TRACER.start_as_current_span(f"request {name}") as span:
                reply = execute_a2a_delegation(
                    endpoint=replicas[(turn - 1) % len(replicas)],
                    auth=None,
                    timeout=60,
                    task_description=f"question {turn} for {name}",
                    context_id=requested,
                )
            if reply.get("error"):
                raise SystemExit(f"{name} turn {turn}: {reply['error']}")
            answered = next((m.context_id for m in reversed(reply["history"]) if m.context_id), None)
            contexts[name] = answered
            record = {
                "callee": name,
                "turn": turn,
                "requested": requested,
                "answered": answered,
                "result": reply.get("result"),
                "trace_id": format(span.get_span_context().trace_id, "032x"),
            }
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
