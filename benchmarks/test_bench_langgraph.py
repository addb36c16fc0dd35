"""Cost of the LangGraph adapter (see docs/benchmarks.md).

One graph run: a one-node ``StateGraph`` (no checkpointer, no model) whose node starts 0 or 20 SDK
spans, invoked bare and with ours. Added cost per run = ours_0 - bare_0; per child span =
(ours_20 - bare_20 - (ours_0 - bare_0)) / 20. Both are given in bare SDK spans (one span started
and ended on a provider without our processor), measured in the same rounds.

``test_langgraph_interleaved`` alternates the variants round by round (instrumenting and
uninstrumenting between them), so machine load drifts hit all of them alike; it prints the
ratios and puts them in the benchmark's ``extra_info``. The ``langgraph-per-run`` group is the
plain pytest-benchmark view of the same runs.
"""

from __future__ import annotations

from typing import TypedDict

import interleaved
import pytest
from langgraph.graph import END, START, StateGraph

from conftest import PROVIDER
from otel_agent_identity import AgentIdentityInstrumentor

CHILDREN = 20
_tracer = PROVIDER.get_tracer("bench")


class S(TypedDict):
    x: int


def _graph(children: int):
    def step(state):
        for _ in range(children):
            _tracer.start_span("child").end()
        return {"x": state["x"] + 1}

    g = StateGraph(S)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_edge("step", END)
    graph = g.compile(name="bench")
    config = {"configurable": {"thread_id": "conv_1"}}
    return lambda: graph.invoke({"x": 0}, config)


@pytest.mark.benchmark(group="langgraph-per-run")
@pytest.mark.parametrize("children", [0, CHILDREN])
@pytest.mark.parametrize("mode", ["1-bare", "2-agent-identity"])
def test_langgraph_run(benchmark, mode, children):
    inst = AgentIdentityInstrumentor()
    if mode.startswith("2"):
        inst.instrument(tracer_provider=PROVIDER)
    try:
        benchmark(_graph(children))
    finally:
        inst.uninstrument()


def measure(rounds: int = 40, runs: int = 100, spans: int = 2000) -> dict[str, float]:
    """Median µs per call of each variant over ``rounds`` interleaved rounds, and the ratios (see
    :func:`interleaved.measure`)."""
    return interleaved.measure(_graph, CHILDREN, rounds, runs, spans)


@pytest.mark.benchmark(group="langgraph-interleaved")
def test_langgraph_interleaved(benchmark):
    result = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info.update({k: round(v, 3) for k, v in result.items()})
    print("\nlanggraph interleaved medians (µs) and ratios:", ", ".join(f"{k}={v:.3f}" for k, v in result.items()))


if __name__ == "__main__":  # python benchmarks/test_bench_langgraph.py
    print({k: round(v, 3) for k, v in measure().items()})
