"""A standalone CrewAI agent (``Agent.kickoff``, no crew; real framework, offline model): each
kickoff, sync or async, is one run, an execution with no conversation id invented; inside a
conversational Flow turn, it is a nested run in the turn's conversation."""

from __future__ import annotations

import asyncio

from crew_support import CONV, EXEC, PARENT_EXEC, RESUMED, agent_spans, forecaster, spans_of
from crewai.flow import ConversationConfig, Flow, listen
from crewai.flow.conversational import ConversationState
from offline_crewai import OfflineCrewLLM, seen

NAME = "invoke_agent Forecaster"


def _runs(exporter, kickoffs: int) -> list:
    """One span per kickoff, each with its own execution id on every span of its run (the tool's
    too), none with a conversation id."""
    runs = agent_spans(exporter, NAME)
    assert len(runs) == kickoffs == len({r.attributes[EXEC] for r in runs})
    for run in runs:
        assert run.instrumentation_scope.name == "otel_agent_identity"
        assert "tool-body" in [s.name for s in spans_of(exporter, run.attributes[EXEC])]
        assert RESUMED not in run.attributes
    assert all(CONV not in s.attributes for s in exporter.get_finished_spans())  # nothing invented
    return runs


def test_each_kickoff_is_one_run_without_a_conversation(instrumentor, exporter):
    agent = forecaster()
    outputs = [agent.kickoff("weather in Paris?") for _ in range(2)]
    assert [seen(o.raw) for o in outputs] == [4, 4] and "sunny in Paris" in outputs[0].raw
    a = _runs(exporter, 2)[0].attributes
    assert a["gen_ai.agent.id"] == str(agent.id) and a["gen_ai.provider.name"] == "crewai"
    assert a["gen_ai.agent.name"] == "Forecaster"


def test_async_kickoffs_are_one_run_each(instrumentor, exporter):
    """``kickoff_async``, ``akickoff`` (which awaits ``kickoff_async``) and ``kickoff`` inside a
    running loop (which returns ``kickoff_async``'s coroutine): one run each, not two."""
    agent = forecaster()

    async def go():
        in_loop = agent.kickoff("weather?")  # a coroutine inside a running loop
        return [await agent.kickoff_async("weather?"), await agent.akickoff("weather?"), await in_loop]

    outputs = asyncio.run(go())
    assert all("sunny in Paris" in o.raw for o in outputs)
    _runs(exporter, 3)


class _Asking(Flow[ConversationState]):
    """A conversational flow whose turns ask a standalone agent."""

    @listen("converse")
    def forecast(self):
        answer = forecaster().kickoff("weather in Paris?").raw
        self.append_assistant_message(answer)
        return answer


def test_a_kickoff_inside_a_turn_is_nested_in_its_conversation(instrumentor, exporter):
    flow = ConversationConfig(llm=OfflineCrewLLM())(_Asking)()
    assert "sunny in Paris" in str(flow.handle_turn("weather?", session_id="s-agent"))
    (turn,) = agent_spans(exporter, "invoke_agent _Asking")
    (run,) = agent_spans(exporter, NAME)
    assert run.attributes[PARENT_EXEC] == turn.attributes[EXEC]
    assert run.attributes[CONV] == turn.attributes[CONV] == "s-agent"
    (body,) = [s for s in exporter.get_finished_spans() if s.name == "tool-body"]
    assert body.attributes[EXEC] == run.attributes[EXEC] and body.attributes[CONV] == "s-agent"
