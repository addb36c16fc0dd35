"""Interleaved per-turn cost of the OpenAI Agents adapter, in CPU time of the thread (time spent
waiting for a core on a loaded machine is not counted, unlike the wall time of pytest-benchmark):

    .venv/bin/python benchmarks/openai_agents_turns.py [ROUNDS]

Instrumented once; rounds alternate the SDK's own ``AgentRunner.run`` (``__wrapped__``) and the
instrumented one on the same offline turn as ``test_bench_openai_agents.py``, with 0 and 20 child spans, and a bare SDK
span as the unit. Prints min and median per variant, in µs.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import test_bench_openai_agents as bench
from agents import Agent, set_trace_processors, set_tracing_disabled
from agents.run import AgentRunner
from opentelemetry.sdk.trace import TracerProvider

from conftest import PROVIDER, use_globally
from otel_agent_identity import AgentIdentityInstrumentor


def _time(fn, n: int = 1) -> float:
    start = time.thread_time_ns()
    for _ in range(n):
        fn()
    return (time.thread_time_ns() - start) / n / 1000


def main(rounds: int) -> None:
    use_globally()
    set_trace_processors([])
    set_tracing_disabled(True)
    AgentIdentityInstrumentor().instrument(tracer_provider=PROVIDER)
    runner = AgentRunner()
    original = AgentRunner.run.__wrapped__  # the SDK's own method, beside the instrumented one
    loop = asyncio.new_event_loop()
    agents = {
        0: Agent(name="bench", model=bench.TurnModel()),
        bench.CHILDREN: Agent(name="bench", model=bench.TurnModel("work"), tools=[bench.work]),
    }
    calls = {
        "bare": lambda a: original(runner, a, "hello", conversation_id="conv_1"),
        "ours": lambda a: runner.run(a, "hello", conversation_id="conv_1"),
    }
    bare_tracer = TracerProvider().get_tracer("unit")
    samples: dict[str, list[float]] = {}
    for i in range(rounds + 20):  # the first 20 rounds warm up
        for children, agent in agents.items():
            for mode, call in calls.items():
                value = _time(lambda call=call, agent=agent: loop.run_until_complete(call(agent)))
                if i >= 20:
                    samples.setdefault(f"turn, {children} child spans, {mode}", []).append(value)
        if i >= 20:
            samples.setdefault("bare SDK span (unit)", []).append(_time(lambda: bare_tracer.start_span("s").end(), 50))
    for name, values in samples.items():
        print(f"{name:34s} min {min(values):9.1f}  median {statistics.median(values):9.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
