"""stream=True in every consumption pattern; many concurrent runs never mix ids."""

from __future__ import annotations

import asyncio
import gc
from concurrent.futures import ThreadPoolExecutor

from helpers import CONV, EXEC, agent_spans, by_execution, make_agent


async def _two_turns_streamed(agent, session, consume):
    await agent.run("first turn", session=session)
    stream = agent.run("tell me the weather", session=session, stream=True)
    return await consume(stream)


async def _drain(stream):
    return "".join([u.text async for u in stream])


async def test_stream_consumed_in_same_task(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    text = await _two_turns_streamed(agent, session, _drain)
    assert "sunny" in text
    spans = exporter.get_finished_spans()
    assert len(agent_spans(spans)) == 2
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}
    assert len(by_execution(spans)) == 2


async def test_stream_consumed_in_another_task(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()

    async def in_other_task(stream):
        return await asyncio.create_task(_drain(stream))

    text = await _two_turns_streamed(agent, session, in_other_task)
    assert "sunny" in text
    spans = exporter.get_finished_spans()
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}
    streamed = [s for s in spans if s.attributes[EXEC] != agent_spans(spans)[0].attributes[EXEC]]
    assert {s.name.split(" ")[0] for s in streamed} >= {"chat", "execute_tool", "invoke_agent"}


async def test_stream_final_response_awaited(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    response = await _two_turns_streamed(agent, session, lambda st: st.get_final_response())
    assert "sunny" in response.text
    assert {s.attributes.get(CONV) for s in exporter.get_finished_spans()} == {"conv_offline_1"}


async def test_stream_abandoned_after_one_chunk(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("first turn", session=session)
    stream = agent.run("a long answer please", session=session, stream=True)
    async for _update in stream:
        break
    del stream
    gc.collect()
    await asyncio.sleep(0)
    spans = exporter.get_finished_spans()
    assert len(agent_spans(spans)) == 2  # the abandoned run's agent span ended too
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}
    # the next run in the same task is unaffected by the abandoned one
    await agent.run("next", session=session)
    assert len(agent_spans(exporter.get_finished_spans())) >= 2


async def test_500_concurrent_runs_keep_their_own_ids(instrumentor, exporter):
    agents = [make_agent("service", prefix=f"a{i}") for i in range(500)]
    sessions = [a.create_session() for a in agents]
    await asyncio.gather(*(a.run("what's the weather", session=s) for a, s in zip(agents, sessions, strict=False)))
    runs = by_execution(exporter.get_finished_spans())
    assert len(runs) == 500
    for spans in runs.values():
        assert len({s.attributes.get(CONV) for s in spans}) == 1
        assert len(spans) == 4  # invoke_agent, chat, execute_tool, chat
    assert {next(iter(spans)).attributes[CONV] for spans in runs.values()} == {f"conv_a{i}_1" for i in range(500)}


def test_50_runs_from_a_thread_pool(instrumentor, exporter):
    def one(i: int) -> str:
        agent = make_agent("service", prefix=f"t{i}")
        session = agent.create_session()
        asyncio.run(agent.run("what's the weather", session=session))
        return session.service_session_id

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(one, range(50)))
    assert ids == [f"conv_t{i}_1" for i in range(50)]
    runs = by_execution(exporter.get_finished_spans())
    assert len(runs) == 50
    for spans in runs.values():
        assert len({s.attributes.get(CONV) for s in spans}) == 1 and len(spans) == 4


async def test_stream_consumed_in_another_thread(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("first turn", session=session)
    stream = agent.run("tell me the weather", session=session, stream=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        text = await asyncio.get_running_loop().run_in_executor(pool, lambda: asyncio.run(_drain(stream)))
    assert "sunny" in text
    spans = exporter.get_finished_spans()
    assert len(agent_spans(spans)) == 2 and len(by_execution(spans)) == 2
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}


async def test_final_response_of_a_temporary_stream(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    response = await agent.run("tell me the weather", session=session, stream=True).get_final_response()
    assert "sunny" in response.text
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.attributes[CONV] == "conv_offline_1"  # the run did not end when the proxy was dropped


async def test_stream_used_as_async_context_manager(instrumentor, exporter):
    agent = make_agent("service")
    session = agent.create_session()
    await agent.run("first turn", session=session)
    async with agent.run("tell me the weather", session=session, stream=True) as stream:
        async for _update in stream:
            break
    spans = exporter.get_finished_spans()
    assert len(agent_spans(spans)) == 2 and len(by_execution(spans)) == 2
    assert {s.attributes.get(CONV) for s in spans} == {"conv_offline_1"}


async def test_async_generator_closed_early_ends_our_span_now_without_error(instrumentor, exporter):
    from opentelemetry.trace import SpanKind, StatusCode

    from otel_agent_identity._runs import SpanSpec

    async def events():
        for i in range(10):
            yield i

    run = instrumentor._handler.start(
        "test", object(), None, (), {}, span=SpanSpec("invoke_agent remote", SpanKind.CLIENT)
    )
    stream = run.call(events, (), {})
    assert await stream.__anext__() == 0
    await stream.aclose()  # what contextlib.aclosing does
    (span,) = exporter.get_finished_spans()
    assert span.name == "invoke_agent remote" and span.status.status_code is StatusCode.UNSET


async def test_cancelled_run_propagates_and_is_not_an_error(instrumentor, exporter, monkeypatch):
    from agent_framework.observability import OBSERVABILITY_SETTINGS
    from opentelemetry.trace import StatusCode

    monkeypatch.setattr(type(OBSERVABILITY_SETTINGS), "ENABLED", property(lambda self: False))
    agent = make_agent("service")
    started = asyncio.Event()

    async def slow(**kwargs):
        started.set()
        await asyncio.sleep(30)

    agent.client._inner_get_response = lambda **kw: slow(**kw)
    task = asyncio.create_task(agent.run("hi", session=agent.create_session()))
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("CancelledError did not reach the caller")
    (span,) = agent_spans(exporter.get_finished_spans())
    assert span.status.status_code is StatusCode.UNSET and "error.type" not in span.attributes
