"""The shared run core keeps every return shape an adapter may see: generators, async generators and
task-based runs stay what they are, each step runs in the run's scope, and the run's span ends on
exhaustion, error, close, ``break`` or garbage collection."""

from __future__ import annotations

import asyncio
import gc
import inspect

import pytest
from opentelemetry import trace

from otel_agent_identity._runs import RunHandler, SpanSpec
from otel_agent_identity.extractors import ExtractorRegistry
from otel_agent_identity.scope import current_scope
from otel_agent_identity.span_processor import IdentitySpanProcessor

EXEC = "agent_identity.execution.id"


@pytest.fixture
def handler(tracer_provider, exporter):
    h = RunHandler(trace.get_tracer("t", tracer_provider=tracer_provider), IdentitySpanProcessor(), ExtractorRegistry())
    h.attach_processor(tracer_provider)
    yield h
    h.processor.enabled = False


def _run(handler, wrapped, *args):
    run = handler.start("test", object(), None, args, {}, span=SpanSpec("invoke_agent t"))
    return run, run.call(wrapped, args, {})


def _seen():
    scope = current_scope()
    return scope.execution_id if scope else None


def _agent_span(exporter):
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent t"]
    return span


def test_generator_keeps_shape_scope_and_return_value(handler, exporter):
    def gen(n):
        for i in range(n):
            got = yield (i, _seen())
            assert got is None
        return "done"

    run, result = _run(handler, gen, 3)
    assert inspect.isgenerator(result)
    assert _seen() is None  # nothing leaks into the caller between steps
    items = []
    with pytest.raises(StopIteration) as stop:
        while True:
            items.append(next(result))
            assert _seen() is None and not trace.get_current_span().is_recording()
    assert stop.value.value == "done"
    assert [i for i, _ in items] == [0, 1, 2] and {e for _, e in items} == {run.scope.execution_id}
    span = _agent_span(exporter)
    assert span.attributes[EXEC] == run.scope.execution_id and span.status.is_ok


@pytest.mark.parametrize("how", ["break_then_gc", "close"])
def test_generator_left_early_ends_the_run(handler, exporter, how):
    closed = []

    def gen():
        try:
            yield 1
            yield 2
        finally:
            closed.append(_seen())

    run, result = _run(handler, gen)
    for _ in result:
        break
    assert exporter.get_finished_spans() == ()
    if how == "close":
        result.close()
    else:
        del result
        gc.collect()
    assert closed == [run.scope.execution_id]  # the framework's cleanup ran in the run's scope
    assert _agent_span(exporter).status.is_unset


def test_generator_error_marks_the_span(handler, exporter):
    def gen():
        yield 1
        raise KeyError("boom")

    _, result = _run(handler, gen)
    with pytest.raises(KeyError):
        list(result)
    span = _agent_span(exporter)
    assert not span.status.is_ok and span.attributes["error.type"] == "KeyError"


def test_generator_send_and_throw_reach_the_inner_generator(handler, exporter):
    def gen():
        got = yield "first"
        try:
            yield f"got {got}"
        except ValueError:
            yield "caught"

    _, result = _run(handler, gen)
    assert next(result) == "first"
    assert result.send("x") == "got x"
    assert result.throw(ValueError()) == "caught"
    result.close()
    assert _agent_span(exporter).status.is_unset


async def test_async_generator_break_ends_the_run_without_leaking(handler, exporter):
    seen = []

    async def agen():
        try:
            for i in range(5):
                await asyncio.sleep(0)
                seen.append(_seen())
                yield i
        finally:
            seen.append(("closed", _seen()))

    run, result = _run(handler, agen)
    assert inspect.isasyncgen(result)
    async for item in result:
        assert _seen() is None
        if item == 1:
            break
    await result.aclose()  # what contextlib.aclosing / the loop's finaliser does
    assert seen == [run.scope.execution_id] * 2 + [("closed", run.scope.execution_id)]
    assert _agent_span(exporter).status.is_unset


async def test_async_generator_dropped_after_break_is_finalised(handler, exporter):
    async def agen():
        for i in range(5):
            yield i

    async def consume():
        _, result = _run(handler, agen)
        async for _ in result:
            break

    await consume()
    gc.collect()
    for _ in range(3):
        await asyncio.sleep(0)  # the loop's async-generator finaliser schedules aclose()
    assert len([s for s in exporter.get_finished_spans() if s.name == "invoke_agent t"]) == 1


async def test_async_generator_consumed_in_another_task(handler, exporter):
    async def agen():
        for _ in range(3):
            await asyncio.sleep(0)
            yield _seen()

    run, result = _run(handler, agen)

    async def drain():
        return [x async for x in result]

    assert await asyncio.create_task(drain()) == [run.scope.execution_id] * 3
    assert _agent_span(exporter).attributes[EXEC] == run.scope.execution_id


async def test_finish_when_done_ends_with_the_task(handler, exporter):
    gate = asyncio.Event()

    async def work():
        await gate.wait()
        return _seen()

    run = handler.start("test", object(), None, (), {}, span=SpanSpec("invoke_agent t"))
    tokens = run.enter()
    try:
        task = asyncio.create_task(work())  # the task copies the run's scope
    finally:
        run.exit(tokens)
    run.finish_when_done(task)
    await asyncio.sleep(0)
    assert exporter.get_finished_spans() == ()
    gate.set()
    assert await task == run.scope.execution_id
    await asyncio.sleep(0)
    assert _agent_span(exporter).status.is_unset


async def test_finish_when_done_records_the_task_error(handler, exporter):
    async def work():
        raise RuntimeError("down")

    run = handler.start("test", object(), None, (), {}, span=SpanSpec("invoke_agent t"))
    task = asyncio.create_task(work())
    run.finish_when_done(task)
    with pytest.raises(RuntimeError):
        await task
    await asyncio.sleep(0)
    assert _agent_span(exporter).attributes["error.type"] == "RuntimeError"


@pytest.mark.parametrize("shape", ["generator", "async generator"])
def test_stream_dropped_before_its_first_step_ends_the_run(handler, exporter, shape):
    def gen():
        yield 1

    async def agen():
        yield 1

    _, result = _run(handler, gen if shape == "generator" else agen)
    del result
    gc.collect()
    assert _agent_span(exporter).status.is_unset


@pytest.mark.parametrize("outcome", ["done", "error", "cancelled"])
async def test_finish_when_done_gives_the_result_to_on_end_only_on_success(handler, exporter, outcome):
    gate, seen = asyncio.Event(), []

    class Result:  # a streamed result the task fills in
        last = None

    result = Result()

    async def work():
        await gate.wait()
        if outcome == "error":
            raise RuntimeError("down")
        result.last = "finisher"

    def on_end(res):
        seen.append(res)
        return {"test.last": res.last}

    run = handler.start("test", object(), None, (), {}, span=SpanSpec("invoke_agent t", on_end=on_end))
    task = asyncio.create_task(work())
    run.finish_when_done(task, result)
    if outcome == "cancelled":
        task.cancel()
    gate.set()
    await asyncio.wait({task})
    await asyncio.sleep(0)
    span = _agent_span(exporter)
    if outcome == "done":
        assert seen == [result] and span.attributes["test.last"] == "finisher"
    else:
        assert seen == [] and "test.last" not in span.attributes


async def test_on_end_reads_the_awaited_result_and_its_failure_does_not_break_the_run(handler, exporter):
    async def work():
        return {"answer": 42}

    def on_end(res):
        raise KeyError("broken on_end")

    run = handler.start(
        "test",
        object(),
        None,
        (),
        {},
        span=SpanSpec("invoke_agent t", on_end=lambda res: {"test.answer": res["answer"]}),
    )
    assert await run.call(work, (), {}) == {"answer": 42}
    assert _agent_span(exporter).attributes["test.answer"] == 42
    exporter.clear()
    run = handler.start("test", object(), None, (), {}, span=SpanSpec("invoke_agent t", on_end=on_end))
    assert await run.call(work, (), {}) == {"answer": 42}  # the application's result, untouched
    assert _agent_span(exporter).end_time is not None


async def test_async_def_runs_in_scope_and_bad_arguments_end_the_run(handler, exporter):
    """A plain ``async def`` is called without attaching the scope (binding its arguments runs none
    of its code): its body still runs in the run's scope; a call that cannot bind ends the run."""

    async def body(x):
        return x, _seen(), trace.get_current_span().is_recording()

    run, coro = _run(handler, body, 1)
    assert inspect.iscoroutine(coro) and _seen() is None
    assert await coro == (1, run.scope.execution_id, True)
    with pytest.raises(TypeError):
        _run(handler, body, 1, 2)
    failed = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent t"][-1]
    assert failed.status.status_code == trace.StatusCode.ERROR and failed.attributes["error.type"] == "TypeError"


def test_wrapped_async_def_keeps_the_scope_for_its_wrappers_sync_part(handler, exporter):
    """Another instrumentation's wrapt wrapper around an ``async def`` may run code when called:
    it is not taken for a plain ``async def``, so that code runs in the run's scope."""
    import wrapt

    seen = []

    @wrapt.decorator
    def other(wrapped, instance, args, kwargs):
        seen.append(_seen())
        return wrapped(*args, **kwargs)

    @other
    async def body():
        return _seen()

    run, coro = _run(handler, body)
    assert seen == [run.scope.execution_id]
    assert asyncio.run(coro) == run.scope.execution_id
