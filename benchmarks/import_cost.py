"""What ``instrument()`` costs an application at start-up: modules in ``sys.modules``, objects the
garbage collector tracks, and wall time, each case in a fresh interpreter (median of ``--rounds``).

Cases: a bare SDK set-up (a ``TracerProvider`` set as the global one); the same plus what every
contrib instrumentor imports (``BaseInstrumentor``, which brings ``packaging`` and
``importlib.metadata``, and wrapt's importer); the same plus ``import otel_agent_identity`` and
``instrument()``. Each with no framework imported, and with one framework imported first (its own
import is in every figure of that row, so the differences are ours). ``--launcher`` adds
``opentelemetry-instrument`` with our instrumentor disabled vs enabled (process wall time; the contrib
httpx/requests instrumentors disabled in both: they import their libraries themselves).

Usage: ``.venv/bin/python benchmarks/import_cost.py [--rounds 5] [--launcher]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASE = r"""
import gc, json, sys, time
framework, mode = sys.argv[1], sys.argv[2]
if framework:
    __import__(framework)
start, cpu0 = time.perf_counter(), time.process_time()
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
provider = TracerProvider()
trace.set_tracer_provider(provider)
if mode != "sdk":  # what every contrib instrumentor imports: BaseInstrumentor (packaging,
    import opentelemetry.instrumentation.instrumentor, wrapt.importer  # importlib.metadata), wrapt
sdk, cpu1 = time.perf_counter(), time.process_time()
if mode == "ours":
    from otel_agent_identity import AgentIdentityInstrumentor
    AgentIdentityInstrumentor().instrument(tracer_provider=provider)
end, cpu2 = time.perf_counter(), time.process_time()
gc.collect()
print(json.dumps({"modules": len(sys.modules), "objects": len(gc.get_objects()),
                  "sdk_ms": (sdk - start) * 1000, "sdk_cpu_ms": (cpu1 - cpu0) * 1000,
                  "ms": (end - sdk) * 1000, "cpu_ms": (cpu2 - cpu1) * 1000}))
"""

LAUNCHED = r"""
import gc, json, sys
gc.collect()
print(json.dumps({"modules": len(sys.modules), "objects": len(gc.get_objects())}))
"""

FRAMEWORKS = ("", "agents", "langgraph.graph", "agno.agent", "agent_framework", "a2a.client", "mcp")


def _run(argv: list[str], env: dict | None = None) -> dict:
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, as an installed application has
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_ms"] = (time.perf_counter() - started) * 1000
    return out


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launcher", action="store_true")
    options = parser.parse_args()
    print(
        "| framework imported first | modules: bare SDK / + contrib base / + ours "
        "| tracked objects: bare SDK / + contrib base / + ours "
        "| bare SDK set-up ms (CPU) | contrib base (CPU) | our import + instrument() ms (CPU) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for framework in FRAMEWORKS:
        runs: dict[str, list] = {"sdk": [], "contrib": [], "ours": []}
        _run([sys.executable, "-c", CASE, framework, "ours"])  # writes the bytecode caches
        for _ in range(options.rounds):  # interleaved: the machine's load hits every case alike
            for mode, rows in runs.items():
                rows.append(_run([sys.executable, "-c", CASE, framework, mode]))
        sdk, contrib, ours = runs["sdk"], runs["contrib"], runs["ours"]
        print(
            f"| {framework or '(none)'} "
            f"| {_median(sdk, 'modules'):.0f} / {_median(contrib, 'modules'):.0f} / {_median(ours, 'modules'):.0f} "
            f"| {_median(sdk, 'objects'):,.0f} / {_median(contrib, 'objects'):,.0f} / {_median(ours, 'objects'):,.0f} "
            f"| {_median(sdk, 'sdk_ms'):.1f} ({_median(sdk, 'sdk_cpu_ms'):.1f}) "
            f"| {_median(contrib, 'sdk_ms') - _median(sdk, 'sdk_ms'):.1f} "
            f"({_median(contrib, 'sdk_cpu_ms') - _median(sdk, 'sdk_cpu_ms'):.1f}) "
            f"| {_median(ours, 'ms'):.1f} ({_median(ours, 'cpu_ms'):.1f}) |",
            flush=True,
        )
    if options.launcher:
        launcher = str(Path(sys.executable).with_name("opentelemetry-instrument"))
        base = dict(os.environ, OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none")
        rows = {}
        for label, disabled in (
            ("launcher, ours disabled", "agent_identity,httpx,httpx2,requests"),
            ("launcher, ours enabled", "httpx,httpx2,requests"),
        ):
            env = dict(base, OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=disabled)
            rows[label] = [_run([launcher, sys.executable, "-c", LAUNCHED], env) for _ in range(options.rounds)]
        for label, runs in rows.items():
            print(
                f"| {label} | modules {_median(runs, 'modules'):.0f} | objects {_median(runs, 'objects'):,.0f} "
                f"| process {_median(runs, 'process_ms'):.0f} ms |"
            )


if __name__ == "__main__":
    main()
