"""CrewAI crews (real framework, offline model): one run per kickoff, never a conversation id of
its own; every span of the run, in CrewAI's threads and tasks, carries its execution id; a
coworker's delegated task is a nested run with a delegation id."""

from __future__ import annotations

import asyncio

import pytest
from crew_support import (
    CONV,
    DELEG,
    EXEC,
    PARENT_EXEC,
    agent_spans,
    delegating_crew,
    hierarchical_crew,
    spans_of,
    weather_crew,
)
from offline_crewai import seen


def _only_run(exporter, name="invoke_agent weather"):
    (span,) = agent_spans(exporter, name)
    assert span.instrumentation_scope.name == "otel_agent_identity"
    execution = span.attributes[EXEC]
    names = [s.name for s in spans_of(exporter, execution)]
    assert "tool-body" in names, names
    assert all(CONV not in s.attributes for s in exporter.get_finished_spans())  # nothing invented
    return span


def test_kickoff_is_one_run_without_a_conversation(instrumentor, exporter):
    crew = weather_crew()
    first = crew.kickoff()
    assert seen(first.raw) == 4 and "sunny in Paris" in first.raw
    a = _only_run(exporter).attributes
    assert a["gen_ai.agent.id"] == str(crew.id) and a["gen_ai.provider.name"] == "crewai"
    exporter.clear()
    crew.kickoff()
    assert _only_run(exporter).attributes[EXEC] != a[EXEC]  # the same Crew.id, a new execution


async def test_akickoff_native_async(instrumentor, exporter):
    result = await weather_crew().akickoff()
    assert "sunny in Paris" in result.raw
    _only_run(exporter)


async def test_kickoff_async_in_crewais_thread(instrumentor, exporter):
    result = await weather_crew().kickoff_async()
    assert "sunny in Paris" in result.raw
    _only_run(exporter)


def test_kickoff_for_each_runs_each_copy(instrumentor, exporter):
    results = weather_crew().kickoff_for_each([{}, {}])
    assert len(results) == 2
    spans = agent_spans(exporter, "invoke_agent weather")
    assert len(spans) == 2 and len({s.attributes[EXEC] for s in spans}) == 2
    assert len({s.attributes["gen_ai.agent.id"] for s in spans}) == 2  # CrewAI copies the crew


def test_async_task_in_crewais_thread(instrumentor, exporter):
    """A task with ``async_execution=True`` runs in a thread CrewAI starts (with a copied context)."""
    crew = weather_crew(async_execution=True)
    crew.tasks.append(type(crew.tasks[0])(description="summary", expected_output="text", agent=crew.agents[0]))
    crew.kickoff()
    span = _only_run(exporter)
    assert len([s for s in spans_of(exporter, span.attributes[EXEC]) if s.name == "tool-body"]) == 2


async def test_concurrent_akickoffs_keep_their_ids(instrumentor, exporter):
    crews = [weather_crew(f"c{i}") for i in range(3)]
    await asyncio.gather(*(c.akickoff() for c in crews))
    for i in range(3):
        _only_run(exporter, f"invoke_agent c{i}")


def test_streamed_kickoff_is_one_run(instrumentor, exporter):
    crew = weather_crew()
    crew.stream = True
    stream = crew.kickoff()
    chunks = list(stream)
    assert "sunny in Paris" in stream.result.raw, chunks
    _only_run(exporter)  # the outer (streaming) call makes no second span


async def test_streamed_akickoff_is_one_run(instrumentor, exporter):
    crew = weather_crew()
    crew.stream = True
    stream = await crew.akickoff()
    async for _ in stream:
        pass
    assert "sunny in Paris" in stream.result.raw
    _only_run(exporter)


@pytest.mark.parametrize("make", [delegating_crew, hierarchical_crew])
def test_delegation_is_a_nested_run(instrumentor, exporter, make):
    crew = make()
    result = crew.kickoff()
    assert "sunny in Paris" in result.raw
    (outer,) = agent_spans(exporter, f"invoke_agent {crew.name}")
    (coworker,) = agent_spans(exporter, "invoke_agent Forecaster")
    c = coworker.attributes
    assert c[PARENT_EXEC] == outer.attributes[EXEC] and c[EXEC] != outer.attributes[EXEC]
    assert len(c[DELEG]) == 32 and DELEG not in outer.attributes
    assert coworker.parent.span_id == outer.context.span_id
    (body,) = [s for s in exporter.get_finished_spans() if s.name == "tool-body"]
    assert body.attributes[EXEC] == c[EXEC] and body.attributes[DELEG] == c[DELEG]
    assert all(CONV not in s.attributes for s in exporter.get_finished_spans())


def test_unknown_coworker_is_no_run(instrumentor, exporter):
    from crewai.tools.agent_tools.delegate_work_tool import DelegateWorkTool

    tool = DelegateWorkTool(agents=[weather_crew().agents[0]], description="d")
    answer = tool._execute("Nobody", "task", "context")
    assert "Nobody".lower() in answer.lower() or "coworker" in answer.lower()
    assert agent_spans(exporter) == []


def test_failed_kickoff_raises_the_apps_error(instrumentor, exporter):
    from offline_crewai import OfflineCrewLLM

    class Boom(OfflineCrewLLM):
        def call(self, *args, **kwargs):
            raise RuntimeError("model down")

    crew = weather_crew()
    crew.agents[0].llm = Boom()
    crew.agents[0].max_retry_limit = 0
    with pytest.raises(RuntimeError, match="model down"):
        crew.kickoff()
    (span,) = agent_spans(exporter, "invoke_agent weather")
    assert span.status.status_code.name == "ERROR"


def test_uninstrument_restores(instrumentor, exporter):
    from crewai import Crew

    instrumentor.uninstrument()
    assert not hasattr(Crew.kickoff, "__wrapped__")
    weather_crew().kickoff()
    assert agent_spans(exporter) == []
    instrumentor.instrument()
    weather_crew().kickoff()
    assert len(agent_spans(exporter)) == 1
