"""The LlamaIndex adapter never breaks the application: instrument/uninstrument cycles, versions
it does not know (one warning, nothing wrapped), bad or hostile ids, unprintable errors, a failure
of its own, and the application's own attribute values on the run's span."""

from __future__ import annotations

import asyncio
import logging

import pytest
from li_support import CONV, EXEC, RESUMED, agent_spans, in_run, weather_agent
from llama_index.core.agent.workflow import FunctionAgent, multi_agent_workflow
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer, Memory
from offline_llama_index import seen
from opentelemetry import trace
from workflows.runtime.types import step_function
from workflows.workflow import Workflow

from otel_agent_identity import AgentIdentityInstrumentor
from otel_agent_identity.adapters import llama_index as adapter
from unprintable import Unprintable, assert_error_span


def _wrapped_now() -> list[bool]:
    return [
        hasattr(vars(Workflow)["run"], "__wrapped__"),
        hasattr(vars(step_function)["partial"], "__wrapped__"),
        hasattr(vars(multi_agent_workflow)["handoff"], "__wrapped__"),
    ]


def _turn(agent=None, **kwargs) -> int:
    async def go():
        return seen(await (agent or weather_agent()).run(user_msg="hello", **kwargs))

    return asyncio.run(go())


def test_instrument_twice_and_uninstrument_restore(tracer_provider, exporter):
    for _ in range(2):
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider)
        inst.instrument(tracer_provider=tracer_provider)
        assert _wrapped_now() == [True] * 3
        assert _turn() == 1
        assert len(agent_spans(exporter.get_finished_spans())) == 1
        inst.uninstrument()
        assert _wrapped_now() == [False] * 3
        exporter.clear()
        assert _turn() == 1
        assert agent_spans(exporter.get_finished_spans()) == []


def _instrumented_warning(tracer_provider, caplog):
    """``instrument()``, and the one warning it logged about llama_index."""
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        inst.instrument(tracer_provider=tracer_provider)
    warned = [r.getMessage() for r in caplog.records if "llama_index" in r.getMessage()]
    if len(warned) != 1:
        inst.uninstrument()
        raise AssertionError(f"one warning expected: {warned}")
    return inst, warned[0]


def test_unknown_workflows_version_is_skipped_with_one_warning(tracer_provider, exporter, caplog, monkeypatch):
    monkeypatch.setattr(adapter, "REQUIREMENTS", ("llama-index-workflows >= 99",))
    inst, warned = _instrumented_warning(tracer_provider, caplog)
    try:
        assert "skipping llama_index" in warned
        assert _wrapped_now() == [False] * 3
        assert _turn() == 1
        assert agent_spans(exporter.get_finished_spans()) == []
    finally:
        inst.uninstrument()


def test_unknown_core_version_keeps_the_ids_and_leaves_the_agents_alone(tracer_provider, exporter, caplog, monkeypatch):
    monkeypatch.setattr(adapter, "CORE_REQUIREMENTS", ("llama-index-core >= 99",))
    inst, warned = _instrumented_warning(tracer_provider, caplog)
    try:
        assert "llama-index-core >= 99" in warned
        assert _wrapped_now() == [True, False, False]
        assert _turn(memory=Memory.from_defaults(session_id="c")) == 1
        (run,) = agent_spans(exporter.get_finished_spans())
        assert run.attributes[CONV] == "c" and RESUMED not in run.attributes
    finally:
        inst.uninstrument()


def test_frameworks_option_leaves_llama_index_alone(tracer_provider, exporter):
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider, frameworks="langgraph")
    try:
        assert _wrapped_now() == [False] * 3
    finally:
        inst.uninstrument()


def test_a_huge_session_id_is_dropped_with_a_warning_and_the_run_works(instrumentor, exporter, caplog):
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        assert _turn(memory=Memory.from_defaults(session_id="s" * 5000)) == 1
    (run,) = agent_spans(exporter.get_finished_spans())
    assert CONV not in run.attributes and run.attributes[EXEC]
    assert any("max_id_length" in r.getMessage() for r in caplog.records)


class HostileMemory(ChatMemoryBuffer):
    """A working memory whose id cannot be read."""

    @property
    def session_id(self):
        raise RuntimeError("no id for you")


def test_a_memory_whose_id_raises_runs_without_one(instrumentor, exporter):
    memory = HostileMemory.from_defaults()
    assert [_turn(memory=memory), _turn(memory=memory)] == [1, 3]
    runs = sorted(agent_spans(exporter.get_finished_spans()), key=lambda s: s.start_time)
    assert [CONV in r.attributes for r in runs] == [False, False]
    assert [r.attributes[RESUMED] for r in runs] == [False, True]


def test_an_unprintable_model_error_ends_as_it_does_bare(tracer_provider, exporter):
    """LlamaIndex's own dispatcher formats a step's error (``SpanDropEvent(err_str=str(e))``): an
    unprintable one reaches the caller as the ``RuntimeError`` its ``__str__`` raises, with or
    without us; the run's span ends with that error."""

    def down(messages, **kwargs):
        raise Unprintable()

    agent = FunctionAgent(name="down", llm=MockFunctionCallingLLM(response_generator=down, is_chat_model=True))
    outcomes = []
    for instrumented in (False, True):
        inst = AgentIdentityInstrumentor()
        if instrumented:
            inst.instrument(tracer_provider=tracer_provider)
        try:
            with pytest.raises(BaseException) as raised:
                _turn(agent)
            outcomes.append((type(raised.value), str(raised.value)))
        finally:
            if instrumented:
                inst.uninstrument()
    assert outcomes[0] == outcomes[1] == (RuntimeError, "__str__ of an unprintable error")
    (run,) = agent_spans(exporter.get_finished_spans())
    assert_error_span(run, "RuntimeError")


def test_a_failure_of_ours_leaves_the_run_bare(instrumentor, exporter, monkeypatch):
    def broken(workflow):
        raise RuntimeError("adapter bug")

    monkeypatch.setattr(adapter, "_span_spec", broken)
    assert _turn(memory=Memory.from_defaults(session_id="c")) == 1
    assert agent_spans(exporter.get_finished_spans()) == []


def test_the_applications_own_conversation_id_on_the_run_span_wins(instrumentor, exporter):
    def tag(city: str) -> str:
        """Tags the current span."""
        trace.get_current_span().set_attribute(CONV, "the-apps-own")
        return city

    agent = weather_agent(tools=[tag])

    async def go():
        await agent.run(user_msg='call tag {"city": "x"}', memory=Memory.from_defaults(session_id="c"))

    asyncio.run(go())
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    assert run.attributes[CONV] == "the-apps-own"
    assert {s.attributes[CONV] for s in in_run(spans, run) if s is not run} == {"c"}


def test_a_finished_run_does_not_pin_its_workflow(instrumentor, exporter):
    """A context a step leaves behind (a timer handle) holds the run's scope: it must not keep the
    workflow alive (llama-index-workflows' own regression test of the same leak, with us on)."""
    import gc
    import weakref

    from llama_index.core.workflow import StartEvent, StopEvent, step

    handles = []

    class Tiny(Workflow):
        @step
        async def only(self, ev: StartEvent) -> StopEvent:
            handles.append(asyncio.get_running_loop().call_later(3600, lambda: None))
            return StopEvent(result="done")

    async def go():
        refs = []
        for _ in range(3):
            workflow = Tiny()
            refs.append(weakref.ref(workflow))
            assert await workflow.run() == "done"
            del workflow
        for _ in range(3):
            gc.collect()
        return [r() is None for r in refs]

    try:
        assert asyncio.run(go()) == [True] * 3
    finally:
        for handle in handles:
            handle.cancel()
    assert len(agent_spans(exporter.get_finished_spans())) == 3
