"""Identity of OpenAI Agents SDK runs, checked against what the SDK really did (the scripted
model records what it was sent and reports how much history it saw)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message
from oa_helpers import (
    CONV,
    EXEC,
    LAST_AGENT,
    PARENT_CONV,
    PARENT_EXEC,
    agent_with_tool,
    call_tool,
    reply_seen,
    spans_named,
)
from opentelemetry import trace
from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor


def _one(spans, prefix):
    (span,) = spans_named(spans, prefix)
    return span


async def test_two_runs_on_a_sqlite_session_continue_one_conversation(instrumentor, exporter):
    session = SQLiteSession("conv-1")
    outputs = []
    for _ in range(2):
        agent = agent_with_tool("helper", [call_tool("lookup", {"city": "Paris"}), reply_seen()])
        outputs.append((await Runner.run(agent, "hi", session=session)).final_output)
        assert agent.model.calls[0].previous_response_id is None
    # ground truth: the second run resumed the session's history (the model saw more items)
    first, second = (int(o.split()[1]) for o in outputs)
    assert second > first
    spans = exporter.get_finished_spans()
    agents = spans_named(spans, "invoke_agent helper")
    assert [s.attributes[CONV] for s in agents] == ["conv-1", "conv-1"]
    assert len({s.attributes[EXEC] for s in agents}) == 2
    for agent_span in agents:
        assert agent_span.kind == trace.SpanKind.INTERNAL
        assert agent_span.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert agent_span.attributes["gen_ai.provider.name"] == "openai"
        assert agent_span.attributes["agent_identity.conversation.source"] == "framework"
        assert "agent_identity.conversation.changed" not in agent_span.attributes
    tools = spans_named(spans, "tool-work")
    assert len(tools) == 2
    for tool_span, agent_span in zip(tools, agents, strict=False):
        assert tool_span.parent.span_id == agent_span.context.span_id
        assert (tool_span.attributes[CONV], tool_span.attributes[EXEC]) == ("conv-1", agent_span.attributes[EXEC])


def test_run_sync(instrumentor, exporter):
    agent = agent_with_tool("sync", [call_tool("lookup", {"city": "Oslo"}), reply_seen()])
    result = Runner.run_sync(agent, "hi", session=SQLiteSession("conv-sync"))
    assert result.final_output.startswith("seen")
    spans = exporter.get_finished_spans()
    agent_span, tool_span = _one(spans, "invoke_agent sync"), _one(spans, "tool-work")
    assert agent_span.attributes[CONV] == tool_span.attributes[CONV] == "conv-sync"
    assert tool_span.attributes[EXEC] == agent_span.attributes[EXEC]


async def test_run_streamed_consumed_span_ends_with_the_run_loop(instrumentor, exporter):
    agent = agent_with_tool("streamer", [call_tool("lookup", {"city": "Rome"}), reply_seen()])
    result = Runner.run_streamed(agent, "hi", session=SQLiteSession("conv-st"))
    assert not spans_named(exporter.get_finished_spans(), "invoke_agent")  # returned; the run goes on
    kinds = [event.type async for event in result.stream_events()]
    assert "run_item_stream_event" in kinds and result.is_complete
    await asyncio.wait({result.run_loop_task})
    spans = exporter.get_finished_spans()
    agent_span, tool_span = _one(spans, "invoke_agent streamer"), _one(spans, "tool-work")
    assert agent_span.attributes[CONV] == tool_span.attributes[CONV] == "conv-st"
    assert tool_span.attributes[EXEC] == agent_span.attributes[EXEC]
    assert tool_span.parent.span_id == agent_span.context.span_id
    assert agent_span.attributes[LAST_AGENT] == "streamer" and agent_span.status.is_ok


@pytest.mark.parametrize("how", ["never_read", "break_after_first_event", "cancel"])
async def test_run_streamed_abandoned_raises_nothing_and_ends_the_span(instrumentor, exporter, how):
    agent = agent_with_tool("quitter", [call_tool("lookup", {"city": "Lima"}), reply_seen()])
    result = Runner.run_streamed(agent, "hi", session=SQLiteSession("conv-ab"))
    task = result.run_loop_task
    if how == "break_after_first_event":
        async for _event in result.stream_events():
            break
    elif how == "cancel":
        result.cancel()
    del result
    await asyncio.wait({task})
    agent_span = _one(exporter.get_finished_spans(), "invoke_agent quitter")
    assert agent_span.attributes[CONV] == "conv-ab" and agent_span.status.is_ok
    assert "error.type" not in agent_span.attributes


def test_run_streamed_never_awaited_ends_at_loop_shutdown(instrumentor, exporter):
    async def main():
        agent = agent_with_tool("left", [reply_seen()])
        Runner.run_streamed(agent, "hi", session=SQLiteSession("conv-left"))  # returned unread

    asyncio.run(main())  # the loop's shutdown cancels or finishes the run loop task
    assert _one(exporter.get_finished_spans(), "invoke_agent left").attributes[CONV] == "conv-left"


async def test_conversation_id_argument_is_the_conversation(instrumentor, exporter):
    agent = agent_with_tool("server_conv", [reply_seen()], tools=[])
    await Runner.run(agent, "hi", conversation_id="conv_abc123")
    assert agent.model.last_call.conversation_id == "conv_abc123"  # the SDK really used it
    assert _one(exporter.get_finished_spans(), "invoke_agent").attributes[CONV] == "conv_abc123"


async def test_previous_response_id_chain_is_not_a_conversation(instrumentor, exporter):
    agent = Agent(
        name="chained",
        model=ScriptedModel(
            [
                ModelStep(output=[assistant_message("one")], response_id="resp_1"),
                ModelStep(output=[assistant_message("two")], response_id="resp_2"),
            ]
        ),
    )
    first = await Runner.run(agent, "hi")
    second = await Runner.run(agent, "again", previous_response_id=first.last_response_id)
    assert agent.model.last_call.previous_response_id == "resp_1"  # ground truth: the chain was used
    assert second.last_response_id == "resp_2"
    agents = spans_named(exporter.get_finished_spans(), "invoke_agent chained")
    assert len(agents) == 2 and all(CONV not in s.attributes for s in agents)
    assert len({s.attributes[EXEC] for s in agents}) == 2


async def test_group_id_is_the_conversation_only_when_opted_in(tracer_provider, exporter, monkeypatch):
    from otel_agent_identity import AgentIdentityInstrumentor

    config = RunConfig(group_id="thread-7")
    cases = [
        ("unset", None, {}, False),
        ("env_false", "false", {}, False),
        ("env_true", "true", {}, True),
        ("kwarg", "false", {"openai_agents_group_id_as_conversation": True}, True),
    ]  # the argument wins
    for name, env, kwargs, opted_in in cases:
        monkeypatch.delenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_OPENAI_AGENTS_GROUP_ID_AS_CONVERSATION", raising=False)
        if env is not None:
            monkeypatch.setenv("OTEL_INSTRUMENTATION_AGENT_IDENTITY_OPENAI_AGENTS_GROUP_ID_AS_CONVERSATION", env)
        inst = AgentIdentityInstrumentor()
        inst.instrument(tracer_provider=tracer_provider, **kwargs)
        try:
            await Runner.run(agent_with_tool(name, [reply_seen()]), "hi", run_config=config)
            await Runner.run(
                agent_with_tool(name, [reply_seen()]),
                "hi",
                run_config={"group_id": "thread-7"},
                session=SQLiteSession("conv-s"),
            )  # a session wins over group_id
        finally:
            inst.uninstrument()
        plain, with_session = spans_named(exporter.get_finished_spans(), f"invoke_agent {name}")
        assert plain.attributes.get(CONV) == ("thread-7" if opted_in else None), name
        assert with_session.attributes[CONV] == "conv-s"


async def test_handoff_stays_in_the_run_and_records_the_last_agent(instrumentor, exporter):
    weather = agent_with_tool("weather_agent", [call_tool("lookup", {"city": "Bern"}), reply_seen()])
    triage = Agent(name="triage", model=ScriptedModel([call_tool("transfer_to_weather_agent", {})]), handoffs=[weather])
    result = await Runner.run(triage, "weather?", session=SQLiteSession("conv-h"))
    assert result.last_agent is weather and result.final_output.startswith("seen")
    spans = exporter.get_finished_spans()
    (agent_span,) = spans_named(spans, "invoke_agent")  # no second run for the handoff
    assert agent_span.name == "invoke_agent triage" and agent_span.attributes[LAST_AGENT] == "weather_agent"
    tool_span = _one(spans, "tool-work")  # the tool of the agent handed off to
    assert (tool_span.attributes[CONV], tool_span.attributes[EXEC]) == ("conv-h", agent_span.attributes[EXEC])


@pytest.mark.parametrize("own_session,streamed", [(False, False), (True, False), (False, True)])
async def test_agent_as_tool_is_a_nested_run(instrumentor, exporter, own_session, streamed):
    weather = agent_with_tool(
        "weather_agent",
        [call_tool("lookup", {"city": "Paris"}), ModelStep(output=[assistant_message("sunny in Paris")])],
    )
    events = []
    as_tool = weather.as_tool(
        tool_name="ask_weather",
        tool_description="Ask the weather agent",
        session=SQLiteSession("conv-weather") if own_session else None,
        on_stream=events.append if streamed else None,
    )  # on_stream: a nested run_streamed
    boss = Agent(
        name="boss",
        tools=[as_tool],
        model=ScriptedModel(
            [
                call_tool("ask_weather", {"input": "Paris?"}),
                ModelStep.respond(lambda call: [assistant_message(str(call.input[-1]["output"]))]),
            ]
        ),
    )
    result = await Runner.run(boss, "weather in Paris?", session=SQLiteSession("conv-boss"))
    assert result.final_output == "sunny in Paris"  # the nested run really ran (no tool error)
    assert bool(events) == streamed
    spans = exporter.get_finished_spans()
    outer, inner = _one(spans, "invoke_agent boss"), _one(spans, "invoke_agent weather_agent")
    assert inner.parent.span_id == outer.context.span_id
    assert inner.attributes[PARENT_EXEC] == outer.attributes[EXEC] != inner.attributes[EXEC]
    assert outer.attributes[CONV] == "conv-boss" and PARENT_EXEC not in outer.attributes
    tool_span = _one(spans, "tool-work")
    assert tool_span.attributes[EXEC] == inner.attributes[EXEC]
    if own_session:
        assert inner.attributes[CONV] == tool_span.attributes[CONV] == "conv-weather"
        # another conversation than its parent's, no mapping declared: visible (issue 16)
        assert inner.attributes[PARENT_CONV] == "conv-boss"
        assert inner.attributes["agent_identity.conversation.parent_differs"] is True
        assert "agent_identity.conversation.parent_differs" not in outer.attributes
    else:  # no conversation of its own: none invented, the outer one recorded as the parent
        assert CONV not in inner.attributes and CONV not in tool_span.attributes
        assert inner.attributes[PARENT_CONV] == "conv-boss"


async def test_http_call_from_a_tool_carries_the_ids(instrumentor, exporter, service):
    HTTPXClientInstrumentor().instrument()
    try:

        @function_tool
        async def fetch(path: str) -> str:
            """Fetch a path from the local service."""
            async with httpx.AsyncClient() as client:
                return (await client.get(f"{service.url}/{path}")).text[:20]

        agent = agent_with_tool("fetcher", [call_tool("fetch", {"path": "tool"}), reply_seen()], tools=[fetch])
        await Runner.run(agent, "hi", session=SQLiteSession("conv-http"))
    finally:
        HTTPXClientInstrumentor().uninstrument()
    spans = exporter.get_finished_spans()
    agent_span = _one(spans, "invoke_agent fetcher")
    (http_span,) = [s for s in spans if s.kind == trace.SpanKind.CLIENT and s.name.startswith("GET")]
    assert http_span.attributes[CONV] == "conv-http" and http_span.attributes[EXEC] == agent_span.attributes[EXEC]


async def test_150_concurrent_runs_do_not_bleed(instrumentor, exporter):
    async def one(i):
        agent = agent_with_tool(f"a{i}", [call_tool("lookup", {"city": f"c{i}"}), reply_seen()])
        session = SQLiteSession(f"conv-{i}")
        if i % 2:
            result = Runner.run_streamed(agent, "hi", session=session)
            async for _ in result.stream_events():
                pass
            await asyncio.wait({result.run_loop_task})
        else:
            await Runner.run(agent, "hi", session=session)

    await asyncio.gather(*(one(i) for i in range(150)))
    spans = exporter.get_finished_spans()
    agents = {s.attributes[EXEC]: s for s in spans_named(spans, "invoke_agent")}
    assert len(agents) == 150
    tools = spans_named(spans, "tool-work")
    assert len(tools) == 150
    for tool_span in tools:
        i = tool_span.attributes["city"][1:]  # ground truth: the run whose model asked for this city
        agent_span = agents[tool_span.attributes[EXEC]]
        assert agent_span.name == f"invoke_agent a{i}" and tool_span.attributes[CONV] == f"conv-{i}"
        assert agent_span.attributes[CONV] == f"conv-{i}" and tool_span.parent.span_id == agent_span.context.span_id


async def test_bad_session_id_is_dropped_with_one_warning_and_the_run_is_unchanged(instrumentor, exporter, caplog):
    import logging

    session = SQLiteSession("x" * 300)  # beyond max_id_length (256)
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        for _ in range(2):
            result = await Runner.run(agent_with_tool("big", [reply_seen()]), "hi", session=session)
    assert result.final_output == "seen 3"  # the session still worked
    warned = [r for r in caplog.records if "max_id_length" in r.getMessage()]
    assert len(warned) == 1
    agents = spans_named(exporter.get_finished_spans(), "invoke_agent big")
    assert len(agents) == 2 and all(CONV not in s.attributes and EXEC in s.attributes for s in agents)


async def test_a_failing_run_raises_the_sdk_error_and_marks_the_span(instrumentor, exporter):
    from agents.exceptions import MaxTurnsExceeded

    agent = agent_with_tool("looping", [call_tool("lookup", {"city": "A"}), call_tool("lookup", {"city": "B"})])
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "hi", max_turns=1, session=SQLiteSession("conv-f"))
    span = _one(exporter.get_finished_spans(), "invoke_agent looping")
    assert span.status.status_code == trace.StatusCode.ERROR and span.attributes["error.type"] == "MaxTurnsExceeded"
    assert span.attributes[CONV] == "conv-f"


async def test_application_execution_id_is_used(instrumentor, exporter):
    import otel_agent_identity

    with otel_agent_identity.execution("job-42"):
        await Runner.run(agent_with_tool("given", [reply_seen()]), "hi")
    assert _one(exporter.get_finished_spans(), "invoke_agent given").attributes[EXEC] == "job-42"


async def test_rejected_options_raise_the_sdk_error_unchanged_from_both_entry_points(instrumentor, exporter):
    from agents.exceptions import UserError

    agent = agent_with_tool("rejected", [reply_seen()])
    options = {"session": SQLiteSession("conv-r"), "conversation_id": "conv_x"}  # the SDK forbids both
    with pytest.raises(UserError):
        Runner.run_streamed(agent, "hi", **options)
    with pytest.raises(UserError):
        await Runner.run(agent, "hi", **options)
    spans = spans_named(exporter.get_finished_spans(), "invoke_agent rejected")
    assert [s.attributes["error.type"] for s in spans] == ["UserError", "UserError"]


async def test_run_resumed_after_an_approval_keeps_its_server_conversation(instrumentor, exporter):
    @function_tool(needs_approval=True)
    def refund(order: str) -> str:
        """Refund an order (needs a human's approval)."""
        return f"refunded {order}"

    agent = agent_with_tool("cashier", [call_tool("refund", {"order": "o-1"}), reply_seen()], tools=[refund])
    first = await Runner.run(agent, "refund o-1", conversation_id="conv_srv_9")
    (approval,) = first.interruptions  # ground truth: the run stopped for approval
    state = first.to_state()
    state.approve(approval)
    resumed = await Runner.run(agent, state)  # no conversation_id: the SDK resumes with the state's
    assert resumed.final_output.startswith("seen") and agent.model.last_call.conversation_id == "conv_srv_9"
    spans = spans_named(exporter.get_finished_spans(), "invoke_agent cashier")
    assert [s.attributes.get(CONV) for s in spans] == ["conv_srv_9", "conv_srv_9"]
    assert spans[0].attributes[EXEC] != spans[1].attributes[EXEC]


async def test_span_names_follow_the_agent_name_run_by_run(instrumentor, exporter):
    # the span spec is shared by runs of agents with one name: a rename or a clone gets its own
    agent = agent_with_tool("first", [reply_seen(), reply_seen()], tools=[])
    await Runner.run(agent, "hi")
    agent.name = "renamed"
    await Runner.run(agent, "hi")
    clone = agent.clone(name="cloned", model=ScriptedModel([reply_seen()]))
    await Runner.run(clone, "hi")
    nameless = agent.clone(name="", model=ScriptedModel([reply_seen()]))
    await Runner.run(nameless, "hi")
    spans = spans_named(exporter.get_finished_spans(), "invoke_agent")
    assert [s.name for s in spans] == [
        "invoke_agent first",
        "invoke_agent renamed",
        "invoke_agent cloned",
        "invoke_agent Agent",
    ]
    assert [s.attributes["gen_ai.agent.name"] for s in spans] == ["first", "renamed", "cloned", "Agent"]
    assert [s.attributes[LAST_AGENT] for s in spans] == ["first", "renamed", "cloned", ""]
