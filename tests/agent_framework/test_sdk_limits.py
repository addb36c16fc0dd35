"""Issue 9, item 7: the SDK's span limits apply to our ids the same way on every span, and under
an attribute count limit the run's ids stay on the agent and chat spans and its execution id on
every span of the framework (written again just before each ends: public API)."""

from __future__ import annotations

import pytest
from helpers import CONV, EXEC, agent_spans, by_execution, make_agent


async def test_attribute_length_limit_cuts_the_id_the_same_everywhere(limited, exporter):
    limited(max_span_attribute_length=12)
    agent = make_agent("local")
    session = agent.create_session()
    await agent.run("what's the weather?", session=session)
    spans = exporter.get_finished_spans()
    assert {s.name.split(" ")[0] for s in spans} == {"invoke_agent", "chat", "execute_tool"}
    assert {s.attributes.get(CONV) for s in spans} == {session.session_id[:12]}  # one conversation, one id
    assert len({s.attributes.get(EXEC) for s in spans}) == 1


@pytest.mark.parametrize("max_attributes", [3, 5, 7])
async def test_attribute_count_limit_keeps_our_ids(limited, exporter, max_attributes):
    limited(max_span_attributes=max_attributes)
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("what's the weather?", session=session)
    await agent.run("and tomorrow?", session=session)
    spans = exporter.get_finished_spans()
    assert len(agent_spans(spans)) == 2
    crowded = [s for s in spans if s.dropped_attributes]
    assert crowded  # the framework's own attributes did overflow the limit
    for span in spans:
        assert len(span.attributes) <= max_attributes
        assert span.attributes.get(EXEC), span.name
        if span.name.startswith(("invoke_agent", "chat")):
            assert span.attributes.get(CONV) == "conv_offline_1" or max_attributes < 3, span.name
    assert len(by_execution(spans)) == 2


@pytest.mark.parametrize("max_attributes", [9, 10, 11, 12, 13])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_response_chain_under_a_count_limit_every_span_has_the_sessions_id(
    limited, exporter, max_attributes, stream
):
    """The framework writes the previous response id on its chat span after our stamp; when the
    limit has evicted the span's ``gen_ai.operation.name`` too, the chat span is still recognised
    (by its name and the framework's tracer) and gets the run's id as it ends."""
    from responses_standin import ResponsesStandIn
    from test_openai_responses import _agent, _seen, _turn

    limited(max_span_attributes=max_attributes)
    with ResponsesStandIn() as standin:
        agent = _agent(standin)
        session = agent.create_session()
        seen = [_seen(await _turn(agent, text, session, stream)) for text in ("hello", "weather?", "and tomorrow?")]
    assert seen[0] < seen[1] < seen[2]  # ground truth: one chain, continued every turn
    spans = exporter.get_finished_spans()
    assert any(s.dropped_attributes for s in spans)
    assert {s.attributes.get(CONV) for s in spans} == {session.session_id}
    assert all(len(s.attributes) <= max_attributes for s in spans)
