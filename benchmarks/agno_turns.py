"""``python benchmarks/agno_turns.py MODE CHILDREN N``: N offline Agno turns (see test_bench_agno.py),
MODE ``bare`` or ``ours``; for instruction counts under ``valgrind --tool=callgrind`` (run with two
values of N and take the difference, so start-up cancels out)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_bench_agno as bench

from otel_agent_identity import AgentIdentityInstrumentor

mode, children, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
turn = bench._turn(children)
if mode == "ours":
    AgentIdentityInstrumentor().instrument(tracer_provider=bench.PROVIDER)
turn()
for _ in range(n):
    turn()
