"""Cost of the instrumentation, side by side in one run (pytest-benchmark; see docs/benchmarks.md).

Per run: the same offline agent turn (one chat span) bare, with the framework's own telemetry,
and with ours on top. Per span: one SDK span started and ended, outside any run and inside a run's
scope with our span processor. Compare the groups' medians.
"""

from __future__ import annotations

import asyncio

import pytest
from agent_framework.observability import OBSERVABILITY_SETTINGS
from offline_chat import OfflineChatClient
from opentelemetry.sdk.trace import TracerProvider

from agent_framework import Agent
from conftest import PROVIDER, attach_scope
from otel_agent_identity import AgentIdentityInstrumentor
from otel_agent_identity.scope import IdentityScope, detach_context


@pytest.fixture(scope="module")
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def _turn(loop):
    agent = Agent(client=OfflineChatClient(mode="service"), name="bench")
    session = agent.create_session()
    loop.run_until_complete(agent.run("hello", session=session))  # service id assigned
    return lambda: loop.run_until_complete(agent.run("hello", session=session))


@pytest.mark.benchmark(group="per-run")
@pytest.mark.parametrize("mode", ["1-bare", "2-framework-telemetry", "3-framework+agent-identity"])
def test_agent_turn(benchmark, loop, mode):
    OBSERVABILITY_SETTINGS.enable_instrumentation = mode != "1-bare"
    inst = AgentIdentityInstrumentor()
    if mode.startswith("3"):
        inst.instrument(tracer_provider=PROVIDER)
    try:
        benchmark(_turn(loop))
    finally:
        inst.uninstrument()
        OBSERVABILITY_SETTINGS.enable_instrumentation = True


@pytest.mark.benchmark(group="per-span")
@pytest.mark.parametrize("mode", ["0-sdk-span-bare-provider", "1-sdk-span", "2-sdk-span-in-run-scope"])
def test_child_span(benchmark, mode):
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=PROVIDER)
    tracer = (TracerProvider() if mode.startswith("0") else PROVIDER).get_tracer("bench")
    token = attach_scope(IdentityScope("conv_1", "exec_1")) if mode.startswith("2") else None
    try:
        benchmark(lambda: tracer.start_span("child").end())
    finally:
        if token is not None:
            detach_context(token)
        inst.uninstrument()
