"""Ids of LlamaIndex runs: the conversation id from the run's memory (never invented), the
execution id that LlamaIndex itself reports as ``run_id``, ids on every span of a run, nested runs,
``AgentWorkflow`` handoffs as delegations, plain workflows, and an application extractor."""

from __future__ import annotations

import asyncio

from li_support import (
    CONV,
    DELEG,
    EXEC,
    PARENT,
    PARENT_CONV,
    agent_spans,
    handoff_to,
    in_run,
    seen_on,
    team,
    weather_agent,
    weather_in,
)
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.workflow import StartEvent, StopEvent, Workflow, step

import otel_agent_identity

SOURCE = "agent_identity.conversation.source"


def _one_run(exporter):
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    return run, in_run(spans, run), spans


def test_memory_session_id_is_the_conversation_and_run_id_the_execution_on_every_span(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        handler = agent.run(user_msg=weather_in("Paris"), memory=Memory.from_defaults(session_id="conv-7"))
        return handler.run_id, await handler

    run_id, result = asyncio.run(go())
    run, inside, spans = _one_run(exporter)
    assert "sunny in Paris" in str(result.response)
    assert run.name == "invoke_agent weather"
    assert run.attributes["gen_ai.agent.name"] == "weather"
    assert run.attributes["gen_ai.provider.name"] == "llama_index"
    assert run.attributes[SOURCE] == "framework"
    assert run.attributes[EXEC] == run_id  # LlamaIndex's own run id is the execution id
    assert len(inside) == len(spans) == 4  # the run, two model calls, the tool (in a worker thread)
    assert {(s.attributes[CONV], s.attributes[EXEC]) for s in inside} == {("conv-7", run_id)}


def test_no_memory_no_conversation_id_and_a_fresh_execution_id_per_run(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        return [(await agent.run(user_msg="hello")) for _ in range(2)]

    asyncio.run(go())
    runs = agent_spans(exporter.get_finished_spans())
    assert len(runs) == 2
    assert all(CONV not in s.attributes for s in exporter.get_finished_spans())  # none invented
    assert len({r.attributes[EXEC] for r in runs}) == 2


def test_a_chat_memory_buffer_key_counts_only_when_the_app_chose_it(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        await agent.run(user_msg="hello", memory=ChatMemoryBuffer.from_defaults())  # key "chat_history"
        await agent.run(user_msg="hello", memory=ChatMemoryBuffer.from_defaults(chat_store_key="user-42"))

    asyncio.run(go())
    first, second = sorted(agent_spans(exporter.get_finished_spans()), key=lambda s: s.start_time)
    assert CONV not in first.attributes
    assert second.attributes[CONV] == "user-42"


def test_a_given_run_id_and_an_execution_block_become_llama_index_s_run_id(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        given = agent.run(user_msg="hello", run_id="run-given")
        with otel_agent_identity.execution("exec-supplied"):
            supplied = agent.run(user_msg="hello")
        await given
        await supplied
        return given.run_id, supplied.run_id

    assert asyncio.run(go()) == ("run-given", "exec-supplied")
    assert sorted(r.attributes[EXEC] for r in agent_spans(exporter.get_finished_spans())) == [
        "exec-supplied",
        "run-given",
    ]


def test_an_application_extractor_wins(instrumentor, exporter):
    otel_agent_identity.register_extractor(FunctionAgent, lambda agent, memory, call: f"app-{agent.name}")

    async def go():
        await weather_agent().run(user_msg="hello", memory=Memory.from_defaults(session_id="framework-id"))

    try:
        asyncio.run(go())
    finally:
        otel_agent_identity.registry.unregister(FunctionAgent)
    run, inside, _ = _one_run(exporter)
    assert run.attributes[CONV] == "app-weather"
    assert run.attributes[SOURCE] == "override"
    assert all(s.attributes[CONV] == "app-weather" for s in inside)


def test_a_nested_agent_run_records_the_enclosing_run(instrumentor, exporter):
    inner = weather_agent("inner")

    async def ask_inner(city: str) -> str:
        """Ask the inner agent."""
        return str(await inner.run(user_msg=weather_in(city)))

    outer = weather_agent("outer", tools=[ask_inner])

    async def go():
        await outer.run(user_msg='call ask_inner {"city": "Rome"}', memory=Memory.from_defaults(session_id="outer-c"))

    asyncio.run(go())
    spans = exporter.get_finished_spans()
    runs = {r.name: r for r in agent_spans(spans)}
    outer_run, inner_run = runs["invoke_agent outer"], runs["invoke_agent inner"]
    assert inner_run.parent.span_id in {s.context.span_id for s in in_run(spans, outer_run)}
    assert inner_run.attributes[PARENT] == outer_run.attributes[EXEC]
    assert inner_run.attributes[PARENT_CONV] == "outer-c"
    assert CONV not in inner_run.attributes  # the inner run has no memory of its own: no id invented
    inner_spans = in_run(spans, inner_run)
    assert len(inner_spans) == 4 and {s.attributes[EXEC] for s in inner_spans} == {inner_run.attributes[EXEC]}
    outer_only = [s for s in in_run(spans, outer_run) if s not in inner_spans]
    assert {s.attributes[EXEC] for s in outer_only} == {outer_run.attributes[EXEC]}


def test_an_agent_workflow_handoff_is_a_delegation(instrumentor, exporter):
    workflow = team()

    async def go():
        return await workflow.run(user_msg=handoff_to("weather"), memory=Memory.from_defaults(session_id="team-1"))

    result = asyncio.run(go())
    assert result.current_agent_name == "weather"
    run, inside, _ = _one_run(exporter)
    assert run.name == "invoke_agent front"
    assert run.attributes["agent_identity.last_agent.name"] == "weather"
    assert DELEG not in run.attributes
    chats = sorted((s for s in inside if s.name == "chat offline"), key=lambda s: s.start_time)
    assert seen_on(inside) == [1, 3]  # the delegate continues the same memory
    before, after = chats
    assert DELEG not in before.attributes  # the root agent's call: before the hop
    assert len(after.attributes[DELEG]) == 32  # the delegate's: inside the hop
    assert {s.attributes[CONV] for s in inside} == {"team-1"}


def test_a_refused_handoff_is_no_delegation_and_an_application_key_names_the_hop(instrumentor, exporter):
    workflow = team()

    async def go():
        await workflow.run(user_msg=handoff_to("nobody"))
        with otel_agent_identity.delegation(key="order-1") as expected:
            await workflow.run(user_msg=handoff_to("weather"))
        return expected

    expected = asyncio.run(go())
    spans = exporter.get_finished_spans()
    refused, accepted = sorted(agent_spans(spans), key=lambda s: s.start_time)
    assert all(DELEG not in s.attributes for s in in_run(spans, refused))
    assert {s.attributes.get(DELEG) for s in in_run(spans, accepted) if s.name == "chat offline"} == {None, expected}


class Echo(Workflow):
    @step
    async def only(self, ev: StartEvent) -> StopEvent:
        return StopEvent(result=ev.get("text"))


def test_a_plain_workflow_is_an_invoke_workflow_span_without_resumed(instrumentor, exporter):
    async def go():
        return await Echo().run(text="hi")

    assert asyncio.run(go()) == "hi"
    (run,) = agent_spans(exporter.get_finished_spans())
    assert run.name == "invoke_workflow Echo"
    assert run.attributes["gen_ai.workflow.name"] == "Echo"
    assert "agent_identity.conversation.resumed" not in run.attributes
    assert run.attributes[EXEC]


class OwnIdAgent(FunctionAgent):
    def _get_otel_conversation_id(self, memory):
        return f"own-{memory.session_id}"


def test_an_agent_class_s_own_step_is_asked_before_the_framework_rule(instrumentor, exporter):
    agent = OwnIdAgent(name="own", description="d", llm=weather_agent().llm)

    async def go():
        await agent.run(user_msg="hello", memory=Memory.from_defaults(session_id="m-1"))

    asyncio.run(go())
    run, _, _ = _one_run(exporter)
    assert run.attributes[CONV] == "own-m-1"
    assert run.attributes[SOURCE] == "agent"
