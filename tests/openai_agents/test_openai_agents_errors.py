"""An application exception that cannot be formatted goes through a run unchanged (the SDK's own
``tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises`` shape): the very
same object, its traceback, and the run's span ended with ERROR status and ``error.type``."""

from __future__ import annotations

import asyncio
import logging

import pytest
from agents import Agent, Runner
from agents.testing import ModelStep, ScriptedModel

from unprintable import Unprintable, assert_error_span


def _failing_agent(error: BaseException) -> Agent:
    return Agent(name="fragile", model=ScriptedModel([ModelStep.raise_error(error)]))


def _agent_span(exporter):
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent fragile"]
    return span


async def test_run_propagates_an_exception_whose_str_raises(instrumentor, exporter):
    error = Unprintable()
    with pytest.raises(Unprintable) as raised:
        await Runner.run(_failing_agent(error), "hi")
    assert raised.value is error and raised.traceback  # the same object, with its traceback
    assert_error_span(_agent_span(exporter))


def test_run_sync_propagates_an_exception_whose_str_raises(instrumentor, exporter):
    error = Unprintable()
    with pytest.raises(Unprintable) as raised:
        Runner.run_sync(_failing_agent(error), "hi")
    assert raised.value is error
    assert_error_span(_agent_span(exporter))


async def test_run_streamed_propagates_it_and_the_span_ends_with_the_error(instrumentor, exporter, caplog):
    error = Unprintable()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        result = Runner.run_streamed(_failing_agent(error), "hi")
        with pytest.raises(Unprintable) as raised:
            async for _event in result.stream_events():
                pass
        await asyncio.wait({result.run_loop_task})
        await asyncio.sleep(0)  # the task's done callbacks run on the next loop pass
    assert raised.value is error
    assert_error_span(_agent_span(exporter))
    assert "Exception in callback" not in caplog.text
