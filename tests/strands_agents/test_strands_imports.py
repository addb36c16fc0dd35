"""Strands is instrumented when the application imports it, never imported by us (a fresh
interpreter: this test process has imported Strands already)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import json, sys, wrapt
from opentelemetry.sdk.trace import TracerProvider
from otel_agent_identity import AgentIdentityInstrumentor
AgentIdentityInstrumentor().instrument(tracer_provider=TracerProvider())
report = {"after_instrument": sorted(m for m in sys.modules if m.split(".")[0] in ("strands", "a2a"))}
from strands import Agent
from strands.multiagent.graph import Graph
from strands.multiagent.swarm import Swarm
from strands.agent.a2a_agent import A2AAgent
classes = (Agent, Swarm, Graph, A2AAgent)
report["wrapped"] = [isinstance(vars(c).get("stream_async"), wrapt.FunctionWrapper) for c in classes]
print(json.dumps(report))
"""


def test_strands_never_imported_by_us_and_wrapped_on_import():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"after_instrument": [], "wrapped": [True, True, True, True]}
