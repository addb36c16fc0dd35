"""Pydantic AI tests: the real framework with offline ``FunctionModel``s."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai")


@pytest.fixture(params=[False, True], ids=["ours", "native"])
def native(request):
    """Whether Pydantic AI's own instrumentation is on (``Agent.instrument_all``): its
    ``invoke_agent`` span is then enriched, else we create one."""
    from pydantic_ai import Agent

    Agent.instrument_all(request.param)
    yield request.param
    Agent.instrument_all(False)
