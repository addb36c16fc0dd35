"""Frameworks are instrumented when the application imports them, never imported by us: each check
runs in a fresh interpreter (this test process has imported every framework already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: top-level modules of every framework and library an adapter or guard wraps
FRAMEWORKS = (
    "agent_framework",
    "agent_framework_a2a",
    "agno",
    "langgraph",
    "langchain_core",
    "a2a",
    "mcp",
    "agents",
    "openai",
    "pydantic_ai",
    "llama_index",
    "workflows",
    "httpx",
    "httpcore",
    "requests",
    "urllib3",
    "aiohttp",
)

#: one wrapped method per adapter: (module the application imports, object path, attribute)
WRAPPED = (
    ("agent_framework", "agent_framework.Agent", "run"),
    ("agent_framework_a2a", "agent_framework_a2a.A2AAgent", "run"),
    ("agno.team", "agno.team.team.Team", "run"),  # first: agno.team.team imports agno.agent mid-way
    ("agno.agent", "agno.agent.agent.Agent", "run"),
    ("agno.agent", "agno.agent._run", "initialize_session"),
    ("agno.agent", "agno.agent._storage", "read_or_create_session"),
    ("agno.workflow", "agno.workflow.workflow.Workflow", "run"),
    ("langgraph.graph", "langgraph.pregel.Pregel", "invoke"),
    ("langgraph.graph", "langgraph.pregel._loop.PregelLoop", "_first"),
    ("a2a.client", "a2a.client.base_client.BaseClient", "send_message"),
    ("mcp", "mcp.shared.jsonrpc_dispatcher.JSONRPCDispatcher", "send_raw_request"),
    ("agents", "agents.run.AgentRunner", "run"),
    ("agents", "agents.run_internal.session_persistence", "_session_get_items"),
    ("pydantic_ai", "pydantic_ai.agent._PreparedAgentRun", "open"),
    ("llama_index.core.agent.workflow", "workflows.workflow.Workflow", "run"),
    ("llama_index.core.agent.workflow", "workflows.runtime.types.step_function", "partial"),
    ("llama_index.core.agent.workflow", "llama_index.core.agent.workflow.multi_agent_workflow", "handoff"),
    ("httpx", "httpcore.ConnectionPool", "handle_request"),
    ("requests", "requests.adapters.HTTPAdapter", "send"),
)

PROBE = r"""
import importlib, json, sys
import wrapt
FRAMEWORKS, WRAPPED, ORDER = json.loads(sys.argv[1])

def imported():
    return sorted({m.split(".")[0] for m in sys.modules} & set(FRAMEWORKS))

def wrapped():
    out = {}
    for module_name, path, attr in WRAPPED:
        importlib.import_module(module_name)
        owner_path, name = path.rsplit(".", 1)
        try:
            owner = getattr(importlib.import_module(owner_path), name)
        except AttributeError:  # a module the framework imports only when it runs (workflows' step_function)
            owner = importlib.import_module(path)
        out[path] = isinstance(vars(owner).get(attr), wrapt.FunctionWrapper)  # not __wrapped__: functools sets it too
    return out

def instrument():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from otel_agent_identity import AgentIdentityInstrumentor
    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    inst = AgentIdentityInstrumentor()
    inst.instrument(tracer_provider=provider)
    return inst

report = {}
if ORDER == "launcher":  # opentelemetry-instrument has called instrument() before this line
    report["after_instrument"] = imported()
    report["wrapped"] = wrapped()
elif ORDER == "after":
    inst = instrument()
    report["after_instrument"] = imported()
    report["wrapped"] = wrapped()
elif ORDER == "before":
    for module_name, _, _ in WRAPPED:
        importlib.import_module(module_name)
    inst = instrument()
    report["wrapped"] = wrapped()
elif ORDER == "uninstrumented":  # a hook still pending after uninstrument() is a no-op
    inst = instrument()
    inst.uninstrument()
    report["after_instrument"] = imported()
    report["wrapped"] = wrapped()
    inst.instrument()  # and a later instrument() wraps what was imported meanwhile
    report["rewrapped"] = wrapped()
print(json.dumps(report))
"""


def _probe(order: str, launcher: bool = False) -> dict:
    argv = [sys.executable, "-c", PROBE, json.dumps([FRAMEWORKS, WRAPPED, order])]
    env = dict(os.environ, OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")
    if launcher:
        argv = [str(Path(sys.executable).with_name("opentelemetry-instrument")), *argv]
        # the contrib instrumentors of httpx and requests import their library themselves: not ours to judge
        env["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] = "httpx,httpx2,requests"
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("order, launcher", [("after", False), ("after", True), ("before", False)])
def test_nothing_imported_by_instrument_and_every_framework_wrapped_on_import(order, launcher):
    report = _probe("launcher" if launcher else order, launcher)
    assert report.get("after_instrument", []) == []
    assert report["wrapped"] == {path: True for _, path, _ in WRAPPED}


def test_a_hook_pending_after_uninstrument_wraps_nothing():
    report = _probe("uninstrumented")
    assert report["after_instrument"] == []
    assert report["wrapped"] == {path: False for _, path, _ in WRAPPED}
    assert report["rewrapped"] == {path: True for _, path, _ in WRAPPED}


MODULES = r"""
import sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # what the launcher and contrib load
import asyncio, importlib.metadata  # stdlib the launcher loads (wrapt's asyncio, the distro's entry points);
# opentelemetry-instrumentation >= 0.62 imports both itself, 0.61b0 (the oldest leg) does not
provider = TracerProvider()
bare = set(sys.modules)
import otel_agent_identity
otel_agent_identity.AgentIdentityInstrumentor().instrument(tracer_provider=provider)
print(len(set(sys.modules) - bare))
"""


def test_instrument_without_a_framework_loads_few_modules():
    """``instrument()`` in an application that imported no framework, on top of the SDK and
    opentelemetry-instrumentation (which the launcher and every contrib instrumentation load, wrapt
    and its asyncio with it): at most 50 modules more (22 at the time of writing: ours and
    ``email.parser``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", MODULES], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) <= 50
