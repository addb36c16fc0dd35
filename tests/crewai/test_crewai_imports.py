"""CrewAI is wrapped when the application imports it, never imported by us; a CrewAI outside the
known versions is skipped with one warning and runs bare. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = r"""
import json, logging, sys
import wrapt
from opentelemetry.sdk.trace import TracerProvider
from otel_agent_identity import AgentIdentityInstrumentor
from otel_agent_identity.adapters import crewai as adapter

if sys.argv[1] == "unknown":
    adapter.REQUIREMENTS = ("crewai >= 99",)
warnings = []
class Handler(logging.Handler):
    def emit(self, record):
        warnings.append(record.getMessage())
logging.getLogger("otel_agent_identity").addHandler(Handler())
AgentIdentityInstrumentor().instrument(tracer_provider=TracerProvider())
report = {"imported_by_instrument": "crewai" in sys.modules}
from crewai import Crew
from crewai.flow.flow import Flow
from crewai.tools.agent_tools.base_agent_tools import BaseAgentTool
wrapped = ((Crew, "kickoff"), (Crew, "akickoff"), (Flow, "kickoff_async"), (BaseAgentTool, "_execute"))
report["wrapped"] = [isinstance(vars(o).get(a), wrapt.FunctionWrapper) for o, a in wrapped]
report["warnings"] = [w for w in warnings if "crewai" in w]
print(json.dumps(report))
"""


def _probe(mode: str) -> dict:
    env = dict(os.environ, CREWAI_DISABLE_TELEMETRY="true", CREWAI_TRACING_ENABLED="false")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_wrapped_on_import_never_imported_by_us():
    report = _probe("known")
    assert report == {"imported_by_instrument": False, "wrapped": [True] * 4, "warnings": []}


def test_unknown_version_skipped_with_one_warning():
    report = _probe("unknown")
    assert report["imported_by_instrument"] is False and report["wrapped"] == [False] * 4
    assert len(report["warnings"]) == 1 and "skipping crewai" in report["warnings"][0], report["warnings"]
