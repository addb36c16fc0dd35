"""Issue 9, item 4: ``stream=True`` keeps the framework's shape, and every combinator of the
returned ``ResponseStream`` keeps the run's scope (ids on chat and tool spans, the run ends when
the derived stream does)."""

from __future__ import annotations

import asyncio
import gc

from helpers import CONV, agent_spans, by_execution, make_agent

from agent_framework import AgentResponse, AgentResponseUpdate, ResponseStream


async def _first_turn(agent):
    session = agent.create_session()
    await agent.run("first turn", session=session)
    return session


def _one_run_stamped(exporter, expected_names=("chat", "execute_tool", "invoke_agent")):
    spans = exporter.get_finished_spans()
    runs = by_execution(spans)
    assert None not in runs, [s.name for s in runs.get(None, [])]
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}
    streamed = [r for r in runs.values() if any(s.name.startswith("execute_tool") for s in r)]
    assert len(streamed) == 1
    assert {s.name.split(" ")[0] for s in streamed[0]} >= set(expected_names)
    return streamed[0]


async def test_await_stream_gives_the_stream_as_the_framework_does(instrumentor, exporter):
    agent = make_agent("service")
    session = await _first_turn(agent)
    stream = await agent.run("tell me the weather", session=session, stream=True)
    assert isinstance(stream, ResponseStream)  # not the final AgentResponse
    text = "".join([u.text async for u in stream])
    assert "sunny" in text
    final = await stream.get_final_response()
    assert isinstance(final, AgentResponse) and "sunny" in final.text
    _one_run_stamped(exporter)


async def test_transform_and_result_hooks_keep_the_run_scope(instrumentor, exporter):
    agent = make_agent("service")
    session = await _first_turn(agent)
    seen, results = [], []
    stream = (
        agent.run("tell me the weather", session=session, stream=True)
        .with_transform_hook(lambda u: seen.append(u) or u)
        .with_result_hook(lambda r: results.append(r) or r)
        .with_cleanup_hook(lambda: None)
    )
    assert isinstance(stream, ResponseStream)
    text = "".join([u.text async for u in stream])
    final = await stream.get_final_response()
    assert "sunny" in text and seen and results == [final]
    _one_run_stamped(exporter)


async def test_map_returns_a_scoped_stream_and_the_run_ends_with_it(instrumentor, exporter):
    agent = make_agent("service")
    session = await _first_turn(agent)
    exporter.clear()
    stream = agent.run("tell me the weather", session=session, stream=True).map(
        lambda u: u.text.upper(), lambda texts: "".join(texts)
    )
    gc.collect()
    await asyncio.sleep(0)
    assert not exporter.get_finished_spans()  # the dropped original proxy did not end the run
    chunks = [c async for c in stream]
    assert "SUNNY" in "".join(chunks)
    assert await stream.get_final_response() == "".join(chunks)
    run = _one_run_stamped(exporter)
    (agent_span,) = agent_spans(run)
    assert all(s.end_time <= agent_span.end_time for s in run)


async def test_a2a_executor_style_hook_consumption(instrumentor, exporter):
    """What ``A2AExecutor(agent, stream=True)`` does: hook, then drain the returned stream."""
    agent = make_agent("service")
    session = await _first_turn(agent)
    updates: list[AgentResponseUpdate] = []

    async def publish(update):
        updates.append(update)
        return update

    async for _ in agent.run("tell me the weather", session=session, stream=True).with_transform_hook(publish):
        pass
    assert updates
    _one_run_stamped(exporter)
