"""The frameworks' own test suites as a regression gate (``make test-peers``, ``make test-peers-full``).

For each framework below, the installed version's own tests (from its source distribution, fetched
once with ``pip download --no-binary :all: --no-deps`` into ``.cache/peers``) run twice in the same
environment: without the plugin, then with it (``-p agent_identity_peer_plugin``: an SDK tracer
provider and ``instrument()`` before the suite imports the framework). A test that passes without
the plugin and fails (or errors) with it is a regression; each is re-run once in both modes to tell
a regression from a flaky test. Exit status 1 when a regression is confirmed.

Usage: ``python tests/peers/peers.py [--full] [--only NAME ...]`` with the interpreter of the peers
environment (``make test-peers`` builds it: the project plus ``tests/peers/requirements.txt``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "peers"
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Peer:
    """A framework's suite: ``dist`` (its pip name), the pytest arguments of the bounded subset
    ``make test-peers`` runs and of the full run, environment variables the suite needs to run
    without services, pytest ``options`` of every run (the re-runs of single tests included),
    ``paths`` of the sdist to put on ``sys.path``, and whether the plugin run sets a global SDK
    ``provider`` first (``False``: the suite sets its own; ``instrument()`` alone, as for an
    application that sets its provider after the launcher). A peer with ``venv`` set runs only
    when named with ``--only``, by that venv's interpreter (its framework cannot share the peers
    environment)."""

    dist: str
    subset: tuple[str, ...]
    full: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    options: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    provider: bool = True
    venv: str | None = None


PEERS = {
    # The SDK's whole offline suite (its conftest blocks network access); the subset: the runner,
    # streaming, tracing-error and scripted-model tests (where the plugin wraps and records).
    "openai_agents": Peer(
        "openai-agents",
        subset=(
            "tests/test_tracing_errors.py",
            "tests/test_tracing_errors_streamed.py",
            "tests/test_scripted_model.py",
            "tests/test_agent_runner.py",
            "tests/test_agent_runner_streamed.py",
            "tests/test_agent_runner_sync.py",
            "tests/test_run_error_details.py",
        ),
        full=("tests",),
    ),
    # NO_DOCKER=true: the in-memory and SQLite savers, caches and stores only (Postgres and Redis
    # parametrisations are left out by the suite itself). Deselected: test_imp_nested, whose
    # expected event order rests on a 10 ms asyncio.sleep margin between two tasks; on the loaded
    # 2-core machine it reorders with the plugin's per-run cost added (passes 6/6 run alone).
    "langgraph": Peer(
        "langgraph",
        subset=(
            "tests/test_pregel.py",
            "tests/test_pregel_async.py",
            "-k",
            "not redis and not postgres and not test_imp_nested",
        ),
        full=("tests", "-k", "not redis and not postgres and not test_imp_nested"),
        env=(("NO_DOCKER", "true"),),
    ),
    # The MCP Python SDK's suite (offline: in-memory, stdio and loopback transports). -p no:asyncio:
    # the suite runs on anyio's plugin and fails on any warning (filterwarnings = error), and
    # pytest-asyncio (the project's own test dependency) warns at start. examples/ on sys.path:
    # the suite's example stories (its dev workspace package). tests/docs (the docs site's build
    # tooling: Markdown, Zensical) left out. provider=False: the suite sets its own (logfire's
    # capfire), and its interaction snapshots pin `_meta` without a traceparent under the no-op
    # tracer it has until then.
    "mcp": Peer(
        "mcp",
        subset=(  # what the adapter wraps: the dispatcher's send/inject, the transports, the server's OTel middleware
            "tests/shared",
            "tests/client/test_client.py",
            "tests/client/test_session.py",
            "tests/client/test_stdio.py",
            "tests/client/test_streamable_http.py",
            "tests/client/transports",
            "tests/interaction/transports",
            "tests/server/test_otel.py",
            "tests/docs_src/test_opentelemetry.py",
        ),
        full=("tests", "--ignore=tests/docs"),
        options=("-p", "no:asyncio"),
        paths=("examples",),
        provider=False,
    ),
    # Strands Agents (in .venv-strands: its a2a extra pins a2a-sdk 0.3; `make test-peers-strands`),
    # offline with its own mocked models and moto. The subset: agent-as-tool, A2AAgent, Swarm,
    # Graph, A2A server/executor and tracer tests (what the adapter wraps and enriches);
    # tests/strands/agent/test_agent.py (181 tests, the Agent itself) in the full run only.
    "strands": Peer(
        "strands-agents",
        subset=(
            "tests/strands/agent/test_agent_as_tool.py",
            "tests/strands/agent/test_a2a_agent.py",
            "tests/strands/multiagent",
            "tests/strands/telemetry/test_tracer.py",
        ),
        full=("tests/strands",),
        venv=".venv-strands",
    ),
    # CrewAI (pins pydantic < 2.13: .venv-crewai, `make test-peers` runs it there). The sdist's
    # suite without its monorepo conftest and VCR cassettes: the flow, conversation, persistence,
    # streaming, thread-safety and custom-LLM tests run offline (what the adapter wraps: Crew
    # kickoffs, Flow.kickoff_async and its turns); telemetry off.
    "crewai": Peer(
        "crewai",
        subset=(
            "tests/test_flow.py",
            "tests/test_flow_conversation.py",
            "tests/test_flow_turns.py",
            "tests/test_flow_persistence.py",
            "tests/test_crew_thread_safety.py",
            "tests/test_streaming.py",
            "tests/test_custom_llm.py",
        ),
        full=("tests",),
        env=(("CREWAI_DISABLE_TELEMETRY", "true"), ("CREWAI_TRACING_ENABLED", "false")),
        venv=".venv-crewai",
    ),
}


def sdist(dist: str) -> Path:
    """The extracted source distribution of the installed ``dist`` (downloaded once)."""
    ver = version(dist)
    CACHE.mkdir(parents=True, exist_ok=True)
    wanted = f"{dist}-{ver}.tar.gz".replace("-", "_").lower()
    found = [p for p in CACHE.glob("*.tar.gz") if p.name.replace("-", "_").lower() == wanted]
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"{dist}=={ver}",
                "-d",
                str(CACHE),
            ],
            check=True,
        )
        found = [p for p in CACHE.glob("*.tar.gz") if p.name.replace("-", "_").lower() == wanted]
    archive = found[0]
    target = CACHE / archive.name[: -len(".tar.gz")]
    if not target.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
    return target


def run_suite(peer: Peer, where: Path, args: tuple[str, ...], plugin: bool, report: Path) -> dict[str, str]:
    """Run pytest on ``args`` in ``where``; returns test id -> outcome (passed/failed/error/skipped)."""
    env = dict(os.environ, **dict(peer.env))
    paths = [str(HERE), *(str(where / p) for p in peer.paths), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    env["AGENT_IDENTITY_PEER_PROVIDER"] = "1" if peer.provider else "0"
    env.pop("OTEL_PYTHON_DISABLED_INSTRUMENTATIONS", None)
    command = [
        sys.executable,
        "-m",
        "pytest",
        *args,
        *peer.options,
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--continue-on-collection-errors",  # a module needing an absent extra (litellm...) is left out
        f"--junitxml={report}",
        "-o",
        "junit_family=xunit2",
    ]
    if plugin:
        command[3:3] = ["-p", "agent_identity_peer_plugin"]
    subprocess.run(command, cwd=where, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return outcomes(report)


def outcomes(report: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not report.exists():
        return out
    for case in ET.parse(report).getroot().iter("testcase"):
        key = f"{case.get('classname')}::{case.get('name')}"
        tags = {child.tag for child in case}
        out[key] = (
            "failed"
            if "failure" in tags
            else "error"
            if "error" in tags
            else "skipped"
            if "skipped" in tags
            else "passed"
        )
    return out


def node_id(key: str, where: Path) -> str:
    """``tests.test_x.TestY::test_z[p]`` -> ``tests/test_x.py::TestY::test_z[p]`` (best effort)."""
    classname, name = key.split("::", 1)
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if (where / path).exists():
            return "::".join([path, *parts[i:], name])
    return key


def compare(name: str, full: bool, tests: tuple[str, ...] = ()) -> dict:
    peer = PEERS[name]
    where = sdist(peer.dist)
    args = tests or (peer.full if full else peer.subset)
    started = time.monotonic()
    without = run_suite(peer, where, args, False, CACHE / f"{name}-without.xml")
    with_plugin = run_suite(peer, where, args, True, CACHE / f"{name}-with.xml")
    broken = sorted(k for k, v in without.items() if v == "passed" and with_plugin.get(k) in ("failed", "error"))
    confirmed = broken
    if broken:  # re-run those once more in both modes: a flaky test is not a regression
        ids = tuple(node_id(k, where) for k in broken)
        again_without = run_suite(peer, where, ids, False, CACHE / f"{name}-again-without.xml")
        again_with = run_suite(peer, where, ids, True, CACHE / f"{name}-again-with.xml")
        confirmed = [k for k in broken if again_without.get(k) == "passed" and again_with.get(k) in ("failed", "error")]
    count = lambda d, o: sum(1 for v in d.values() if v == o)  # noqa: E731
    return {
        "peer": name,
        "version": version(peer.dist),
        "full": full,
        "args": list(args),
        "seconds": round(time.monotonic() - started, 1),
        "without": {o: count(without, o) for o in ("passed", "failed", "error", "skipped")},
        "with": {o: count(with_plugin, o) for o in ("passed", "failed", "error", "skipped")},
        "regressions": confirmed,
        "flaky": sorted(set(broken) - set(confirmed)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the whole suites (documented run) instead of the subset")
    parser.add_argument("--only", nargs="*", choices=sorted(PEERS), help="these peers only")
    parser.add_argument("--tests", nargs="*", default=(), help="pytest arguments instead of the peer's own (one peer)")
    options = parser.parse_args()
    failed = False
    for name in options.only or [n for n, p in PEERS.items() if p.venv is None]:
        try:
            version(PEERS[name].dist)
        except PackageNotFoundError:  # a framework of another venv (Strands, CrewAI): run it with --only there
            print(json.dumps({"peer": name, "skipped": f"{PEERS[name].dist} is not installed here"}), flush=True)
            continue
        result = compare(name, options.full, tuple(options.tests))
        print(json.dumps(result), flush=True)
        failed |= bool(result["regressions"]) or result["without"]["passed"] == 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
