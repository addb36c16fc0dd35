"""How a LlamaIndex run goes on after ``run()`` returned: streamed, abandoned, never awaited,
cancelled, failing; many at once in one loop and in OS threads; spans in the tasks and threads a
tool starts. The handler and its stream are LlamaIndex's own, unchanged."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from li_support import CONV, EXEC, agent_spans, in_run, weather_agent, weather_in
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer
from offline_llama_index import seen
from opentelemetry import trace
from opentelemetry.trace import StatusCode
from workflows.errors import WorkflowCancelledByUser
from workflows.handler import WorkflowHandler

_tracer = trace.get_tracer("li-tests")


async def _until(condition, timeout: float = 30.0) -> None:
    """Wait (bounded) until ``condition()`` holds, one loop turn at a time."""

    async def poll():
        while not condition():
            await asyncio.sleep(0)

    await asyncio.wait_for(poll(), timeout)


def _ids(spans) -> set:
    return {(s.attributes.get(CONV), s.attributes.get(EXEC)) for s in spans}


def test_a_streamed_run_keeps_its_events_and_ends_with_the_run(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        handler = agent.run(user_msg=weather_in("Oslo"), memory=ChatMemoryBuffer.from_defaults(chat_store_key="c-1"))
        assert type(handler) is WorkflowHandler
        events = [type(ev).__name__ async for ev in handler.stream_events()]
        return events, await handler

    events, result = asyncio.run(go())
    assert events[0] == "AgentInput" and events[-1] == "StopEvent"
    assert {"ToolCall", "ToolCallResult", "AgentOutput"} <= set(events)
    assert "sunny in Oslo" in str(result.response)
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    assert len(in_run(spans, run)) == len(spans) == 4
    assert _ids(spans) == {("c-1", run.attributes[EXEC])}


def test_an_abandoned_stream_and_a_run_never_awaited_still_end(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        streamed = agent.run(user_msg=weather_in("Oslo"))
        async for _ in streamed.stream_events():
            break  # the caller stops reading: the run goes on
        ignored = agent.run(user_msg="hello")  # never awaited nor streamed
        await _until(lambda: len(agent_spans(exporter.get_finished_spans())) == 2)
        return [str(streamed.get_stop_event().result.response), ignored.is_done()]

    out = asyncio.run(go())
    assert "sunny in Oslo" in out[0] and out[1] is True
    runs = agent_spans(exporter.get_finished_spans())
    assert all(r.status.status_code is StatusCode.UNSET for r in runs)


def test_a_cancelled_run_ends_its_span_without_an_error(instrumentor, exporter):
    async def go():
        started = asyncio.Event()

        async def wait_forever(x: str) -> str:
            """Waits until cancelled."""
            started.set()
            await asyncio.Event().wait()
            return x

        agent = weather_agent(tools=[wait_forever])
        handler = agent.run(user_msg='call wait_forever {"x": "1"}')
        await asyncio.wait_for(started.wait(), 30)
        await handler.cancel_run()
        with pytest.raises(WorkflowCancelledByUser):
            await handler

    asyncio.run(go())
    (run,) = agent_spans(exporter.get_finished_spans())
    assert run.status.status_code is StatusCode.UNSET
    assert "error.type" not in run.attributes


def test_a_failing_run_raises_the_same_error_and_marks_its_span(instrumentor, exporter):
    class ModelDown(Exception):
        pass

    def down(messages, **kwargs):
        raise ModelDown("model down")

    agent = FunctionAgent(
        name="down", description="d", llm=MockFunctionCallingLLM(response_generator=down, is_chat_model=True)
    )

    async def go():
        with pytest.raises(ModelDown, match="model down"):
            await agent.run(user_msg="hi")

    asyncio.run(go())
    (run,) = agent_spans(exporter.get_finished_spans())
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"].endswith("ModelDown")


def test_an_error_raised_by_run_itself_reaches_the_caller_unchanged(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        with pytest.raises(ValueError, match="start_event"):
            agent.run(start_event="not an event")

    asyncio.run(go())
    (run,) = agent_spans(exporter.get_finished_spans())
    assert run.status.status_code is StatusCode.ERROR


def _check_no_bleed(exporter, convs: list[str], turns: int) -> None:
    spans = exporter.get_finished_spans()
    runs = agent_spans(spans)
    assert len(runs) == turns * len(convs)
    assert sorted(r.attributes[CONV] for r in runs) == sorted(convs * turns)
    assert len({r.attributes[EXEC] for r in runs}) == len(runs)
    covered = 0
    for run in runs:
        inside = in_run(spans, run)
        covered += len(inside)
        assert len(inside) == 4
        assert _ids(inside) == {(run.attributes[CONV], run.attributes[EXEC])}
        (tool,) = [s for s in inside if s.name.startswith("execute_tool")]
        assert tool.attributes["offline.city"] == run.attributes[CONV]  # the run's own tool call
    assert covered == len(spans)


async def _two_turns(agent, conv: str) -> list[int]:
    memory = ChatMemoryBuffer.from_defaults(chat_store_key=conv)
    return [seen(await agent.run(user_msg=weather_in(conv), memory=memory)) for _ in range(2)]


def test_100_concurrent_runs_two_turns_each(instrumentor, exporter):
    agent = weather_agent()
    convs = [f"conv-{i}" for i in range(100)]

    async def go():
        return await asyncio.gather(*(_two_turns(agent, c) for c in convs))

    assert asyncio.run(go()) == [[3, 7]] * len(convs)
    _check_no_bleed(exporter, convs, 2)


def test_runs_in_8_os_threads_each_with_its_loop(instrumentor, exporter):
    agent = weather_agent()
    convs = [f"th-{i}" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda c: asyncio.run(_two_turns(agent, c)), convs))
    assert results == [[3, 7]] * len(convs)
    _check_no_bleed(exporter, convs, 2)


def test_spans_in_tasks_and_threads_a_tool_starts_carry_the_run(instrumentor, exporter, submit):
    def in_thread(label: str) -> None:
        _tracer.start_span(f"thread {label}").end()

    async def in_task(label: str) -> None:
        await asyncio.sleep(0)
        _tracer.start_span(f"task {label}").end()

    async def fan_out(label: str) -> str:
        """Work in a task and in a worker thread."""
        await asyncio.gather(*(asyncio.create_task(in_task(f"{label}{i}")) for i in range(3)))
        with ThreadPoolExecutor(2) as pool:
            for future in [submit(pool, in_thread, f"{label}{i}") for i in range(2)]:
                future.result()
        return "done"

    agent = weather_agent(tools=[fan_out])

    async def go():
        memory = ChatMemoryBuffer.from_defaults(chat_store_key="fan")
        await agent.run(user_msg='call fan_out {"label": "x"}', memory=memory)

    asyncio.run(go())
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    workers = [s for s in spans if s.name.startswith(("task ", "thread "))]
    assert len(workers) == 5
    assert _ids(workers) == {("fan", run.attributes[EXEC])}
