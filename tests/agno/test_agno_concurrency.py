"""Many Agno runs at once, in tasks and in threads: every span carries its own run's ids (no bleed),
checked against the ids Agno handed each run's model and tool."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from agno_support import CONV, EXEC, TOOL_CALLS, agent_spans, inside, make_agent


@pytest.fixture(autouse=True)
def _clear_tool_calls():
    TOOL_CALLS.clear()


def _check_no_bleed(spans, outputs, agents):
    runs = {s.attributes[EXEC]: s for s in agent_spans(spans)}
    assert len(runs) == len(outputs)
    truth = {(c.run_id, c.session_id) for a in agents for c in a.model.calls}
    tools = {(run_id, session_id) for run_id, session_id, _ in TOOL_CALLS}
    for out in outputs:
        assert (out.run_id, out.session_id) in truth and (out.run_id, out.session_id) in tools
        span = runs[out.run_id]
        assert span.attributes[CONV] == out.session_id
        below = inside(spans, span)
        assert [s.name for s in below].count("weather lookup") == 1
        assert {(s.attributes[EXEC], s.attributes[CONV]) for s in below} == {(out.run_id, out.session_id)}
    assert len([s for s in spans if s.name == "weather lookup"]) == len(outputs)


async def test_150_concurrent_arun_on_one_agent(instrumentor, exporter):
    agent = make_agent()
    outputs = await asyncio.gather(*(agent.arun(f"weather in City{i}", session_id=f"conv-{i}") for i in range(150)))
    assert [o.session_id for o in outputs] == [f"conv-{i}" for i in range(150)]
    assert all(o.content == f"offline: sunny in City{i}" for i, o in enumerate(outputs))
    assert len({t[2] for t in TOOL_CALLS}) > 1  # the sync tool ran in worker threads
    _check_no_bleed(exporter.get_finished_spans(), outputs, [agent])


async def test_150_concurrent_arun_streams_with_generated_sessions(instrumentor, exporter):
    agents = [make_agent(name=f"a{i}") for i in range(150)]

    async def one(agent):
        events = [
            e async for e in agent.arun("weather in Bern", stream=True, stream_events=True, yield_run_output=True)
        ]
        return events[-1]

    outputs = await asyncio.gather(*(one(a) for a in agents))
    assert [o.session_id for o in outputs] == [a.session_id for a in agents]  # each generated its own
    assert len({o.session_id for o in outputs}) == 150
    _check_no_bleed(exporter.get_finished_spans(), outputs, agents)


def test_30_threaded_runs_on_one_agent(instrumentor, exporter):
    agent = make_agent()
    with ThreadPoolExecutor(30) as pool:
        outputs = list(pool.map(lambda i: agent.run(f"weather in Town{i}", session_id=f"conv-{i}"), range(30)))
    _check_no_bleed(exporter.get_finished_spans(), outputs, [agent])


def test_30_threaded_runs_racing_for_a_generated_session(instrumentor, exporter):
    """No session anywhere: threads race Agno's write-back of the generated id; each span still
    carries the session id its own run used (RunOutput.session_id)."""
    agent = make_agent(db=None)
    with ThreadPoolExecutor(30) as pool:
        outputs = list(
            pool.map(lambda i: agent.run(f"weather in Town{i}", stream=i % 2 == 0, yield_run_output=True), range(30))
        )
    outputs = [o if not hasattr(o, "__next__") else list(o)[-1] for o in outputs]
    _check_no_bleed(exporter.get_finished_spans(), outputs, [agent])
