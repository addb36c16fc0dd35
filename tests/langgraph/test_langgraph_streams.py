"""Every LangGraph entry point gives one span per graph run; streams keep their shape and scope,
and end their run on exhaustion, error, close, break or garbage collection, without leaking the
span into the caller."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import threading
import warnings

import pytest
from lg_support import CONV, EXEC, agent_spans, in_run, make_agent, seen_counts
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from otel_agent_identity import current_scope

CFG = {"configurable": {"thread_id": "conv-ep"}}
IN = {"messages": [("user", "Paris")]}


def _final(chunks):
    return chunks[-1] if chunks else None


def _stream_events_v3(agent):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental API warning
        run = agent.stream_events(IN, CFG, version="v3")
    return run.output


async def _astream_events_v3(agent):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = await agent.astream_events(IN, CFG, version="v3")
    return await run.output()


ENTRY_POINTS = {
    "invoke": (1, lambda a: a.invoke(IN, CFG)),
    "ainvoke": (1, lambda a: a.ainvoke(IN, CFG)),
    "stream": (1, lambda a: _final(list(a.stream(IN, CFG, stream_mode="values")))),
    "astream": (1, lambda a: _acollect(a.astream(IN, CFG, stream_mode="values"))),
    "batch": (
        2,
        lambda a: a.batch([IN, IN], [{"configurable": {"thread_id": "b1"}}, {"configurable": {"thread_id": "b2"}}])[0],
    ),
    "abatch": (
        2,
        lambda a: _first(
            a.abatch([IN, IN], [{"configurable": {"thread_id": "b1"}}, {"configurable": {"thread_id": "b2"}}])
        ),
    ),
    "astream_events": (1, lambda a: _aevents(a.astream_events(IN, CFG, version="v2"))),
    "stream_events_v3": (1, _stream_events_v3),
    "astream_events_v3": (1, _astream_events_v3),
}


async def _acollect(agen):
    return _final([c async for c in agen])


async def _first(coro):
    return (await coro)[0]


async def _aevents(agen):
    return _final([e async for e in agen if e["event"] == "on_chain_end" and e["name"] == "weather_agent"])["data"][
        "output"
    ]


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
async def test_every_entry_point_one_span_per_run(instrumentor, exporter, entry):
    runs, call = ENTRY_POINTS[entry]
    result = call(make_agent())
    if inspect.isawaitable(result):
        result = await result
    assert seen_counts(result) == [3]  # the run happened, with the tool
    spans = exporter.get_finished_spans()
    agents = agent_spans(spans)
    assert len(agents) == runs and len({a.attributes[EXEC] for a in agents}) == runs
    for agent in agents:
        inside = in_run(spans, agent)
        assert sorted(s.name for s in inside) == [
            "chat offline",
            "chat offline",
            "execute_tool get_weather",
            agent.name,
        ]
        assert {s.attributes[EXEC] for s in inside} == {agent.attributes[EXEC]}
        assert {s.attributes[CONV] for s in inside} == {agent.attributes[CONV]}
    assert sum(len(in_run(spans, a)) for a in agents) == len(spans)
    assert {a.attributes[CONV] for a in agents} == ({"b1", "b2"} if runs == 2 else {"conv-ep"})


def _nothing_leaks():
    assert current_scope() is None and not trace.get_current_span().is_recording()


def test_stream_scope_is_per_step_not_across_the_callers_code(instrumentor, exporter, caplog):
    with caplog.at_level(logging.DEBUG):
        stream = make_agent().stream(IN, CFG, stream_mode="updates")
        assert inspect.isgenerator(stream)
        _nothing_leaks()
        for _chunk in stream:
            _nothing_leaks()  # the caller's code between steps is outside the run
        _nothing_leaks()
    assert "Failed to detach context" not in caplog.text
    assert len(agent_spans(exporter.get_finished_spans())) == 1


async def test_astream_scope_is_per_step(instrumentor, exporter, caplog):
    with caplog.at_level(logging.DEBUG):
        stream = make_agent().astream(IN, CFG, stream_mode="updates")
        assert inspect.isasyncgen(stream)
        async for _chunk in stream:
            _nothing_leaks()
        _nothing_leaks()
    assert "Failed to detach context" not in caplog.text
    assert len(agent_spans(exporter.get_finished_spans())) == 1


def _ended_early(exporter):
    (agent,) = agent_spans(exporter.get_finished_spans())
    assert agent.status.status_code == StatusCode.UNSET  # a consumer stopping early is no failure
    return agent


@pytest.mark.parametrize("how", ["break_then_gc", "close"])
def test_stream_left_early_ends_the_run(instrumentor, exporter, caplog, how):
    with caplog.at_level(logging.DEBUG):
        stream = make_agent().stream(IN, CFG, stream_mode="updates")
        for _chunk in stream:
            break
        _nothing_leaks()
        assert agent_spans(exporter.get_finished_spans()) == []
        if how == "close":
            stream.close()
        else:
            del stream
            gc.collect()
    _ended_early(exporter)
    _nothing_leaks()
    assert "Failed to detach context" not in caplog.text


@pytest.mark.parametrize("how", ["break", "aclose"])
async def test_astream_left_early_ends_the_run(instrumentor, exporter, caplog, how):
    with caplog.at_level(logging.DEBUG):
        stream = make_agent().astream(IN, CFG, stream_mode="updates")
        if how == "break":
            async for _chunk in stream:
                break
            del stream
            gc.collect()
            for _ in range(100):  # the loop's async-generator finaliser schedules aclose(), and
                await asyncio.sleep(0)  # LangGraph's cleanup takes a few loop turns
                if agent_spans(exporter.get_finished_spans()):
                    break
        else:
            await stream.__anext__()
            await stream.aclose()
        _nothing_leaks()
    _ended_early(exporter)
    assert "Failed to detach context" not in caplog.text


def test_stream_consumed_in_another_thread(instrumentor, exporter):
    stream = make_agent().stream(IN, CFG, stream_mode="values")
    out = []
    worker = threading.Thread(target=lambda: out.extend(stream))
    worker.start()
    worker.join()
    assert seen_counts(out[-1]) == [3]
    spans = exporter.get_finished_spans()
    (agent,) = agent_spans(spans)
    assert {s.attributes[EXEC] for s in in_run(spans, agent)} == {agent.attributes[EXEC]} and len(spans) == 4


async def test_astream_consumed_in_another_task_and_chained(instrumentor, exporter):
    agent = make_agent()

    async def relay(agen):  # a chained consumer, as a web framework's streaming response would be
        async for chunk in agen:
            yield chunk

    async def consume():
        return [c async for c in relay(agent.astream(IN, CFG, stream_mode="values"))]

    chunks = await asyncio.create_task(consume())
    assert seen_counts(chunks[-1]) == [3]
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    assert len(in_run(spans, run)) == len(spans) == 4


async def test_astream_error_in_a_node(instrumentor, exporter):
    from lg_support import counter_graph

    def boom(state):
        raise RuntimeError("node failed")

    with pytest.raises(RuntimeError, match="node failed"):
        async for _ in counter_graph("g", boom).astream({"x": 0}):
            pass
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR and span.attributes["error.type"] == "RuntimeError"
    _nothing_leaks()


async def test_stream_created_but_never_iterated_ends_its_span(instrumentor, exporter):
    from lg_support import counter_graph

    graph = counter_graph("g")
    for stream in (graph.stream({"x": 0}), graph.astream({"x": 0})):
        del stream
        gc.collect()
    spans = exporter.get_finished_spans()
    assert len(spans) == 2 and all(s.status.status_code == StatusCode.UNSET for s in spans)
    _nothing_leaks()
