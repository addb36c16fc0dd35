"""``python benchmarks/agno_turns.py MODE CHILDREN N``: N offline Agno turns (see test_bench_agno.py),
MODE ``bare`` or ``ours``; for instruction counts under ``valgrind --tool=callgrind`` (run with two
values of N and take the difference, so start-up cancels out)."""

import sys

import test_bench_agno as bench

from conftest import use_globally
from otel_agent_identity import AgentIdentityInstrumentor

use_globally()

mode, children, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
turn = bench._turn(children)
if mode == "ours":
    AgentIdentityInstrumentor().instrument(tracer_provider=bench.PROVIDER)
turn()
for _ in range(n):
    turn()
