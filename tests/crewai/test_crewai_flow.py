"""CrewAI conversational flows (real framework, offline model that reports how many messages it
got): a turn's conversation id is its session id (``handle_turn(session_id=...)``, else
``state.id``); ``resumed`` follows what CrewAI really restored, checked both ways against what the
model saw; crews and delegations inside a turn share its conversation."""

from __future__ import annotations

import pytest
from crew_support import CONV, DELEG, EXEC, PARENT_EXEC, RESUMED, SOURCE, Chat, Pipeline, agent_spans, spans_of
from crewai.flow import ConversationConfig, Flow, listen
from crewai.flow.conversational import ConversationState
from crewai.flow.persistence import SQLiteFlowPersistence, persist
from offline_crewai import OfflineCrewLLM, seen


def _turn(exporter, cid, resumed, name="invoke_agent Chat"):
    """The turn's one span: the session id, the resumed value, ids on every span of the run."""
    (span,) = agent_spans(exporter, name)
    a = span.attributes
    assert a[CONV] == cid and a[SOURCE] == "framework" and a[RESUMED] is resumed, dict(a)
    assert all(s.attributes.get(CONV) == cid for s in spans_of(exporter, a[EXEC]))
    exporter.clear()
    return span


@pytest.fixture
def persisted(tmp_path):
    """A conversational flow class persisted to SQLite: a fresh instance restores a session by id."""

    @persist(SQLiteFlowPersistence(str(tmp_path / "flows.db")))
    @ConversationConfig(llm=OfflineCrewLLM())
    class Persisted(Flow[ConversationState]):
        pass

    return Persisted


def test_persisted_session_resumed_in_a_fresh_instance(instrumentor, exporter, persisted):
    assert seen(persisted().handle_turn("hi", session_id="s-1")) == 2
    _turn(exporter, "s-1", resumed=False, name="invoke_agent Persisted")
    assert seen(persisted().handle_turn("again", session_id="s-1")) == 4  # the model got turn 1
    _turn(exporter, "s-1", resumed=True, name="invoke_agent Persisted")
    assert seen(persisted().handle_turn("other", session_id="s-2")) == 2  # a new session: nothing restored
    _turn(exporter, "s-2", resumed=False, name="invoke_agent Persisted")


def test_forgetting_flow_is_not_resumed(instrumentor, exporter):
    """No persistence: a fresh instance given the same session id starts from nothing (the model
    sees 2 messages), and says so; the same instance keeps its messages (4)."""
    first = Chat()
    assert seen(first.handle_turn("hi", session_id="s-f")) == 2
    _turn(exporter, "s-f", resumed=False)
    assert seen(Chat().handle_turn("again", session_id="s-f")) == 2
    _turn(exporter, "s-f", resumed=False)
    assert seen(first.handle_turn("again", session_id="s-f")) == 4
    _turn(exporter, "s-f", resumed=True)


def test_state_id_without_session_id(instrumentor, exporter):
    flow = Chat()
    assert seen(flow.handle_turn("hi")) == 2
    _turn(exporter, flow.state.id, resumed=False)
    assert seen(flow.handle_turn("again")) == 4
    _turn(exporter, flow.state.id, resumed=True)


def test_stream_turn(instrumentor, exporter):
    flow = Chat()
    session = flow.stream_turn("hi", session_id="s-st")
    frames = list(session)
    assert frames and seen(session.result) == 2
    _turn(exporter, "s-st", resumed=False)


async def test_handle_turn_under_a_running_loop(instrumentor, exporter):
    """Under a running loop CrewAI runs the turn's kickoff in a worker thread (context copied)."""
    assert seen(Chat().handle_turn("hi", session_id="s-loop")) == 2
    _turn(exporter, "s-loop", resumed=False)


class _Routed(Flow[ConversationState]):
    """A conversational flow whose turns kick off a crew that delegates (its own listener)."""

    @listen("converse")
    def forecast(self):
        from crew_support import delegating_crew

        answer = delegating_crew().kickoff().raw
        self.append_assistant_message(answer)
        return answer


def test_crew_and_delegation_inside_a_turn_share_its_conversation(instrumentor, exporter):
    flow = ConversationConfig(llm=OfflineCrewLLM())(_Routed)()
    answer = flow.handle_turn("weather?", session_id="s-crew")
    assert "sunny in Paris" in str(answer)
    (turn,) = agent_spans(exporter, "invoke_agent _Routed")
    (crew,) = agent_spans(exporter, "invoke_agent delegating")
    (coworker,) = agent_spans(exporter, "invoke_agent Forecaster")
    assert crew.attributes[PARENT_EXEC] == turn.attributes[EXEC]
    assert coworker.attributes[PARENT_EXEC] == crew.attributes[EXEC] and DELEG in coworker.attributes
    for span in (turn, crew, coworker):
        assert span.attributes[CONV] == "s-crew"
    assert RESUMED not in crew.attributes and RESUMED not in coworker.attributes
    (body,) = [s for s in exporter.get_finished_spans() if s.name == "tool-body"]
    assert body.attributes[CONV] == "s-crew" and body.attributes[EXEC] == coworker.attributes[EXEC]
    assert {s.context.trace_id for s in exporter.get_finished_spans()} == {turn.context.trace_id}


def test_plain_flow_is_a_workflow_run_without_a_conversation(instrumentor, exporter):
    Pipeline().kickoff()
    (flow,) = agent_spans(exporter, "invoke_workflow Pipeline")
    (crew,) = agent_spans(exporter, "invoke_agent inner")
    assert crew.attributes[PARENT_EXEC] == flow.attributes[EXEC]
    assert all(CONV not in s.attributes for s in exporter.get_finished_spans())
    # CrewAI's own flows (each agent's AgentExecutor) are part of the run, not runs of their own
    assert len(agent_spans(exporter)) == 2


def test_failed_turn_raises_the_apps_error(instrumentor, exporter):
    class Down(OfflineCrewLLM):
        def call(self, *args, **kwargs):
            raise RuntimeError("model down")

    flow = ConversationConfig(llm=Down())(type("Broken", (Flow[ConversationState],), {}))()
    with pytest.raises(RuntimeError, match="model down"):
        flow.handle_turn("hi", session_id="s-err")
    (span,) = agent_spans(exporter, "invoke_agent Broken")
    assert span.status.status_code.name == "ERROR" and span.attributes[CONV] == "s-err"


def test_bad_session_ids_are_refused_not_fatal(instrumentor, exporter, caplog):
    """A session id longer than max_id_length: one log line, no id recorded, the turn still runs."""
    huge = "s" * 5000
    assert seen(Chat().handle_turn("hi", session_id=huge)) == 2
    (span,) = agent_spans(exporter, "invoke_agent Chat")
    assert CONV not in span.attributes and EXEC in span.attributes
    refused = [r.getMessage() for r in caplog.records if "agent type" in r.getMessage() and "Chat" in r.getMessage()]
    assert len(refused) == 1, refused


def test_streamed_plain_flow_is_one_run(instrumentor, exporter):
    flow = Pipeline()
    flow.stream = True
    session = flow.kickoff()
    frames = list(session)
    assert frames and "sunny in Paris" in str(session.result)
    (outer,) = agent_spans(exporter, "invoke_workflow Pipeline")  # the outer (streaming) call makes no second span
    (crew,) = agent_spans(exporter, "invoke_agent inner")
    assert crew.attributes[PARENT_EXEC] == outer.attributes[EXEC]
