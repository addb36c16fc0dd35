"""A node's exception that cannot be formatted reaches the caller unchanged, through ``invoke``,
``ainvoke``, ``stream`` and ``astream``; the graph's run span ends with ERROR and ``error.type``."""

from __future__ import annotations

import pytest
from lg_support import agent_spans, counter_graph

from unprintable import Unprintable, assert_error_span


def _graph(error: BaseException):
    def node(state):
        raise error

    return counter_graph("fragile", node)


def _check(exporter, raised, error) -> None:
    assert raised.value is error and raised.traceback
    (span,) = agent_spans(exporter.get_finished_spans())
    assert_error_span(span)


def test_invoke(instrumentor, exporter):
    error = Unprintable()
    with pytest.raises(Unprintable) as raised:
        _graph(error).invoke({"x": 1})
    _check(exporter, raised, error)


async def test_ainvoke(instrumentor, exporter):
    error = Unprintable()
    with pytest.raises(Unprintable) as raised:
        await _graph(error).ainvoke({"x": 1})
    _check(exporter, raised, error)


def test_stream(instrumentor, exporter):
    error = Unprintable()
    with pytest.raises(Unprintable) as raised:
        for _chunk in _graph(error).stream({"x": 1}):
            pass
    _check(exporter, raised, error)


async def test_astream(instrumentor, exporter):
    error = Unprintable()
    with pytest.raises(Unprintable) as raised:
        async for _chunk in _graph(error).astream({"x": 1}):
            pass
    _check(exporter, raised, error)
