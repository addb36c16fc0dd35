"""The interleaved measure shared by the per-framework benchmarks (``test_bench_agno.py``,
``test_bench_langgraph.py``): bare and instrumented runs alternate round by round, so machine load
drifts hit all variants alike; every figure is also a ratio to one bare SDK span of the same rounds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from opentelemetry.sdk.trace import TracerProvider

from conftest import PROVIDER
from otel_agent_identity import AgentIdentityInstrumentor

_bare_tracer = TracerProvider().get_tracer("bench")


def _per_call(fn: Callable[[], object], n: int, clock: Callable[[], float]) -> float:
    """µs per call of ``fn`` over ``n`` calls, by ``clock`` (seconds)."""
    start = clock()
    for _ in range(n):
        fn()
    return (clock() - start) / n * 1e6


def measure(
    make: Callable[[int], Callable[[], object]],
    children: int,
    rounds: int,
    runs: int,
    spans: int = 2000,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median µs per call of each variant over ``rounds`` interleaved rounds, and the ratios.

    ``make(c)`` returns one run of the workload whose run starts ``c`` child SDK spans (0 and
    ``children`` are measured); ``runs`` calls per variant and round, ``spans`` bare SDK spans for
    the unit. ``clock``: ``time.thread_time`` for a workload that runs in the calling thread (the
    machine's other processes are then not counted). Keys: ``sdk_span``, ``bare_0``, ``ours_0``,
    ``bare_{children}``, ``ours_{children}`` (µs), ``per_run_us``, ``per_child_us`` (added by agent
    identity, µs) and the same two as ``..._in_sdk_spans``.
    """
    workloads = {c: make(c) for c in (0, children)}
    samples: dict[str, list[float]] = {}
    inst = AgentIdentityInstrumentor()
    for _ in range(rounds):
        samples.setdefault("sdk_span", []).append(_per_call(lambda: _bare_tracer.start_span("s").end(), spans, clock))
        for mode in ("bare", "ours"):
            if mode == "ours":
                inst.instrument(tracer_provider=PROVIDER)
            try:
                for c, fn in workloads.items():
                    fn()  # warm
                    samples.setdefault(f"{mode}_{c}", []).append(_per_call(fn, runs, clock))
            finally:
                if mode == "ours":
                    inst.uninstrument()
    med = {k: statistics.median(v) for k, v in samples.items()}
    per_run = med["ours_0"] - med["bare_0"]
    per_child = (med[f"ours_{children}"] - med[f"bare_{children}"] - per_run) / children
    med.update(
        per_run_us=per_run,
        per_child_us=per_child,
        per_run_in_sdk_spans=per_run / med["sdk_span"],
        per_child_in_sdk_spans=per_child / med["sdk_span"],
    )
    return med
