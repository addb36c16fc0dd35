"""Cost of the OpenAI Agents SDK adapter, side by side in one run (see docs/benchmarks.md).

Per run: the same offline ``Runner.run`` turn (a model that answers at once, a server-managed
``conversation_id``, SDK tracing disabled) bare and with ours. Per child span: the same turn whose
tool starts 20 SDK spans, bare and with ours; (ours_20 - bare_20 - (ours_0 - bare_0)) / 20 is the
added cost of one child span. Compare the groups' medians with the bare SDK span of
``test_bench_overhead.py::test_child_span[0-sdk-span-bare-provider]``.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from agents import Agent, Runner, function_tool, set_trace_processors, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.testing import assistant_message, function_call
from agents.usage import Usage

from conftest import PROVIDER
from otel_agent_identity import AgentIdentityInstrumentor

CHILDREN = 20
_tracer = PROVIDER.get_tracer("bench")


class TurnModel(Model):
    """Offline: with ``tool`` it calls it on the first model call of a run, then answers."""

    def __init__(self, tool: str | None = None) -> None:
        self.tool = tool

    async def get_response(self, system_instructions, input, *args, **kwargs):
        if self.tool and (isinstance(input, str) or input[-1].get("type") != "function_call_output"):
            output = [function_call(self.tool, {}, call_id="call_1")]
        else:
            output = [assistant_message("ok")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


@function_tool
def work() -> str:
    """Start child spans."""
    for _ in range(CHILDREN):
        _tracer.start_span("child").end()
    return "done"


@pytest.fixture(scope="module")
def loop():
    set_trace_processors([])
    set_tracing_disabled(True)
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.mark.benchmark(group="openai-agents-per-run")
@pytest.mark.parametrize("children", [0, CHILDREN])
@pytest.mark.parametrize("mode", ["1-bare", "2-agent-identity"])
def test_openai_agents_turn(benchmark, loop, mode, children):
    agent = Agent(name="bench", model=TurnModel("work" if children else None), tools=[work] if children else [])
    inst = AgentIdentityInstrumentor()
    if mode.startswith("2"):
        inst.instrument(tracer_provider=PROVIDER)
    try:
        benchmark(lambda: loop.run_until_complete(Runner.run(agent, "hello", conversation_id="conv_1")))
    finally:
        inst.uninstrument()


@pytest.mark.benchmark(group="openai-agents-wrapper")
@pytest.mark.parametrize("mode", ["0-sdk-span-bare-provider", "1-no-op-run-bare", "2-no-op-run-through-our-wrapper"])
def test_openai_agents_wrapper(benchmark, mode):
    """What the adapter adds to one run, without the SDK's ~1.5 ms around it: ``AgentRunner.run``'s
    wrapper (span, scope, extraction before and after, result attributes) around a no-op coroutine."""
    from opentelemetry.sdk.trace import TracerProvider

    from otel_agent_identity.adapters import openai_agents as adapter

    async def run(*args, **kwargs):
        return None

    def drive(coro):
        with contextlib.suppress(StopIteration):
            coro.send(None)

    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=PROVIDER)
    agent = Agent(name="bench")
    args, kwargs = (agent, "hello"), {"conversation_id": "conv_1"}
    wrapper = adapter._run_wrapper(inst._handler)
    unit = TracerProvider().get_tracer("unit")
    try:
        if mode.startswith("0"):
            benchmark(lambda: unit.start_span("s").end())
        elif mode.startswith("1"):
            benchmark(lambda: drive(run(*args, **kwargs)))
        else:
            benchmark(lambda: drive(wrapper(run, None, args, kwargs)))
    finally:
        inst.uninstrument()
