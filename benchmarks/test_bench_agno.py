"""Cost of the Agno adapter (see docs/benchmarks.md).

One offline Agno turn: ``Agent.run`` with an explicit ``session_id``, no db, the offline model of
``tests/agno`` calling a tool that starts 0 or 20 SDK spans, then answering. Measured bare and with
ours. Added cost per run = ours_0 - bare_0; per child span = (ours_20 - bare_20 - (ours_0 -
bare_0)) / 20. Both are given in bare SDK spans (one span started and ended on a provider without
our processor), measured in the same rounds, as CPU time of the measuring thread.

``test_agno_interleaved`` alternates the variants round by round (instrumenting and uninstrumenting
between them), so machine load drifts hit all of them alike; it prints the ratios and puts them in
the benchmark's ``extra_info``. The ``agno-per-run`` group is the plain pytest-benchmark view.
"""

from __future__ import annotations

import os
import time

os.environ["AGNO_TELEMETRY"] = "false"  # before agno is imported: no call home

import interleaved
import pytest
from agno.agent import Agent
from offline_agno_model import OfflineModel

from conftest import PROVIDER
from otel_agent_identity import AgentIdentityInstrumentor

CHILDREN = 20
_tracer = PROVIDER.get_tracer("bench")


def _turn(children: int):
    def get_weather(city: str) -> str:
        """Return the weather for a city."""
        for _ in range(children):
            _tracer.start_span("child").end()
        return "sunny"

    model = OfflineModel()
    agent = Agent(name="bench", model=model, tools=[get_weather], telemetry=False)

    def run():
        agent.run("weather in Paris", session_id="conv_1")
        model.calls.clear()

    return run


@pytest.mark.benchmark(group="agno-per-run")
@pytest.mark.parametrize("children", [0, CHILDREN])
@pytest.mark.parametrize("mode", ["1-bare", "2-agent-identity"])
def test_agno_run(benchmark, mode, children):
    inst = AgentIdentityInstrumentor()
    if mode.startswith("2"):
        inst.instrument(tracer_provider=PROVIDER)
    try:
        benchmark(_turn(children))
    finally:
        inst.uninstrument()


def measure(rounds: int = 30, runs: int = 40, spans: int = 2000) -> dict[str, float]:
    """Median µs of this thread's CPU per call of each variant over ``rounds`` interleaved rounds, and
    the ratios (see :func:`interleaved.measure`; the sync turn runs in this thread)."""
    return interleaved.measure(_turn, CHILDREN, rounds, runs, spans, clock=time.thread_time)


@pytest.mark.benchmark(group="agno-interleaved")
def test_agno_interleaved(benchmark):
    result = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update({k: round(v, 3) for k, v in result.items()})
    print("\nagno interleaved medians (µs) and ratios:", ", ".join(f"{k}={v:.3f}" for k, v in result.items()))


if __name__ == "__main__":  # python benchmarks/test_bench_agno.py
    print({k: round(v, 3) for k, v in measure().items()})
