"""Next to ours, the SDK's own tracing is unchanged; a server-assigned conversation (the
Conversations API, served on 127.0.0.1) is read after the first turn; uninstrument and version skip."""

from __future__ import annotations

import logging

from agents import Agent, RunConfig, Runner, SQLiteSession, set_trace_processors, set_tracing_disabled
from agents.memory import OpenAIConversationsSession
from agents.run import AgentRunner
from agents.testing import ModelStep, ScriptedModel, assistant_message
from agents.tracing import TracingProcessor
from oa_helpers import CONV, EXEC, agent_with_tool, call_tool, lookup, reply_seen, spans_named
from openai import AsyncOpenAI

from otel_agent_identity import AgentIdentityInstrumentor
from otel_agent_identity.adapters import openai_agents as oa_adapter


class Collect(TracingProcessor):
    """An application's own SDK trace processor."""

    def __init__(self) -> None:
        self.traces, self.spans = [], []

    def on_trace_start(self, trace) -> None:
        self.traces.append(trace)

    def on_trace_end(self, trace) -> None:
        pass

    def on_span_start(self, span) -> None:
        pass

    def on_span_end(self, span) -> None:
        self.spans.append(span.span_data.type)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


async def _sdk_run(processor: Collect) -> None:
    set_tracing_disabled(False)
    set_trace_processors([processor])
    agent = agent_with_tool("traced", [call_tool("lookup", {"city": "Kyiv"}), reply_seen()])
    await Runner.run(agent, "hi", session=SQLiteSession("conv-t"), run_config=RunConfig(group_id="g-1"))


async def test_sdk_tracing_is_unchanged_and_set_tracing_disabled_is_honoured(tracer_provider, exporter):
    bare = Collect()
    await _sdk_run(bare)  # not instrumented: what the SDK's processors get on their own
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    try:
        ours = Collect()
        await _sdk_run(ours)
        assert [t.export()["group_id"] for t in ours.traces] == ["g-1"]
        assert ours.spans == bare.spans and {"agent", "function"} <= set(ours.spans)
        set_tracing_disabled(True)
        off = Collect()
        set_trace_processors([off])
        await Runner.run(agent_with_tool("untraced", [reply_seen()]), "hi", session=SQLiteSession("conv-u"))
        assert off.traces == [] and off.spans == []
    finally:
        inst.uninstrument()
    spans = exporter.get_finished_spans()
    assert [s.attributes[CONV] for s in spans_named(spans, "invoke_agent")] == ["conv-t", "conv-u"]


async def test_openai_conversations_session_id_is_read_after_the_first_turn(instrumentor, exporter, service, caplog):
    client = AsyncOpenAI(base_url=f"{service.url}/v1", api_key="offline", max_retries=0)
    session = OpenAIConversationsSession(openai_client=client)
    model = ScriptedModel([call_tool("lookup", {"city": "Turin"}), reply_seen(), reply_seen()])
    agent = Agent(name="served", model=model, tools=[lookup])
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        first = await Runner.run(agent, "hi", session=session)
        second = await Runner.run(agent, "again", session=session)
    (conv_id,) = service.conversations  # the id the service assigned during turn 1
    assert session.session_id == conv_id
    assert (first.final_output, second.final_output) == ("seen 3", "seen 5")  # turn 2 resumed its history
    finished = exporter.get_finished_spans()
    spans = spans_named(finished, "invoke_agent served")
    assert [s.attributes.get(CONV) for s in spans] == [conv_id, conv_id]
    (tool_span,) = spans_named(finished, "tool-work")  # turn 1, after the service assigned the id
    assert tool_span.attributes[CONV] == conv_id and tool_span.attributes[EXEC] == spans[0].attributes[EXEC]
    assert all("agent_identity.conversation.changed" not in s.attributes for s in spans)
    assert spans[0].attributes[EXEC] != spans[1].attributes[EXEC]
    # "not yet available" before turn 1 is no extractor failure (only our logger: another test's
    # unclosed httpx2 client may log from asyncio when the garbage collector closes it here)
    assert not [r for r in caplog.records if r.name.startswith("otel_agent_identity")]


def test_uninstrument_restores_the_runner(tracer_provider, exporter):
    original = (AgentRunner.run, AgentRunner.run_streamed)
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=tracer_provider)
    assert AgentRunner.run is not original[0]
    inst.uninstrument()
    assert (AgentRunner.run, AgentRunner.run_streamed) == original
    Runner.run_sync(Agent(name="bare", model=ScriptedModel([ModelStep(output=[assistant_message("x")])])), "hi")
    assert not spans_named(exporter.get_finished_spans(), "invoke_agent")


def test_unknown_version_is_skipped_with_one_warning(tracer_provider, monkeypatch, caplog):
    monkeypatch.setattr(oa_adapter, "REQUIREMENTS", ("openai-agents < 0.1",))
    original = AgentRunner.run
    inst = AgentIdentityInstrumentor()
    with caplog.at_level(logging.WARNING, logger="otel_agent_identity"):
        inst.instrument(tracer_provider=tracer_provider)
    try:
        assert AgentRunner.run is original
        skipped = [r for r in caplog.records if "openai_agents" in r.getMessage()]
        assert len(skipped) == 1 and "openai-agents < 0.1" in skipped[0].getMessage()
    finally:
        inst.uninstrument()
