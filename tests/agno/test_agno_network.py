"""No network call leaves the process during Agno runs (AGNO_TELEMETRY=false, offline model), and the
guard that says so does catch Agno's telemetry call when telemetry is on."""

from __future__ import annotations

import time

from agno.db.in_memory import InMemoryDb
from agno.team import Team
from agno.workflow import Step, Workflow
from agno_support import agent_spans, make_agent
from offline_agno_model import OfflineModel


async def test_runs_of_every_kind_make_no_network_call(instrumentor, exporter, no_network):
    agent = make_agent()
    agent.run("weather in Paris")
    list(agent.run("weather in Paris", stream=True))
    await agent.arun("weather in Paris")
    [e async for e in agent.arun("weather in Paris", stream=True)]
    member = make_agent(name="weather", id="weather-agent", db=None)
    Team(name="desk", members=[member], model=OfflineModel(delegate_to="weather-agent"), db=InMemoryDb()).run(
        "delegate: weather in Rome"
    )
    Workflow(name="flow", steps=[Step(name="one", agent=make_agent(name="step", db=None))], db=InMemoryDb()).run(
        "hello"
    )
    assert len(agent_spans(exporter.get_finished_spans())) == 8
    assert no_network.attempts == []


def test_the_guard_catches_agno_telemetry_when_it_is_on(instrumentor, exporter, no_network, monkeypatch):
    from agno.api.settings import agno_api_settings

    no_network.expect_attempts = True
    # a name that never resolves (RFC 6761), refused by the guard before any lookup leaves anyway
    monkeypatch.setattr(agno_api_settings, "api_url", "http://telemetry.agno.invalid")
    monkeypatch.setenv("AGNO_TELEMETRY", "true")
    agent = make_agent(telemetry=True)
    agent.run("hello")
    deadline = time.monotonic() + 10
    while not no_network.attempts and time.monotonic() < deadline:
        time.sleep(0.05)  # Agno posts from its background telemetry thread
    assert any("telemetry.agno.invalid" in a for a in no_network.attempts), no_network.attempts
