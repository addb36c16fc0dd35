"""An Agno app with no tracing code of its own: run it under the launcher.

    AGNO_TELEMETRY=false opentelemetry-instrument --traces_exporter console --metrics_exporter none \\
        --service_name agno-app python tests/agno/agno_app.py

Two turns of one agent without a session id (Agno generates it in turn 1), a Team delegating to
a member, a two-step Workflow and a streamed ``arun``. The ids Agno reports (the ground truth) are
printed to stdout as JSON lines starting with ``{"kind"``; with ``AGNO_APP_NET_GUARD=1`` every
non-loopback lookup or connect is refused and the attempts are printed last.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # net_guard
sys.path.insert(0, str(Path(__file__).resolve().parent))

from net_guard import NetGuard

GUARD = NetGuard()
if os.environ.get("AGNO_APP_NET_GUARD") == "1":
    GUARD.install()

from agno.db.in_memory import InMemoryDb  # noqa: E402
from agno.team import Team  # noqa: E402
from agno.workflow import Step, Workflow  # noqa: E402
from agno_support import make_agent  # noqa: E402
from offline_agno_model import OfflineModel  # noqa: E402


def record(kind: str, out, **extra) -> None:
    print(json.dumps({"kind": kind, "run_id": out.run_id, "session_id": out.session_id, **extra}), flush=True)


async def streamed(agent) -> None:
    events = [e async for e in agent.arun("weather in Lima", stream=True, stream_events=True, yield_run_output=True)]
    record("agent-stream", events[-1])


def main() -> None:
    agent = make_agent(name="weather")
    for question in ("what is the weather in Paris", "thanks"):
        out = agent.run(question)
        record("agent", out, content=out.content)
    member = make_agent(name="forecaster", id="forecaster", db=None)
    team = Team(
        name="desk",
        id="desk",
        members=[member],
        db=InMemoryDb(),
        model=OfflineModel(prefix="lead", delegate_to="forecaster"),
    )
    out = team.run("delegate: weather in Rome")
    (member_out,) = out.member_responses
    record("team", out, member_run_id=member_out.run_id, member_parent_run_id=member_out.parent_run_id)
    first, second = make_agent(name="first", db=None), make_agent(name="second", db=None)
    workflow = Workflow(
        name="pipeline", db=InMemoryDb(), steps=[Step(name="look", agent=first), Step(name="answer", agent=second)]
    )
    out = workflow.run("weather in Oslo")
    record("workflow", out, step_run_ids=[first.model.calls[0].run_id, second.model.calls[0].run_id])
    asyncio.run(streamed(agent))
    print(json.dumps({"network_attempts": GUARD.attempts}), flush=True)


if __name__ == "__main__":
    main()
