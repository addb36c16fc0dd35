# SPDX-License-Identifier: Apache-2.0
"""Hops from Python callers to real ``@a2a-js/sdk`` agents, judged by the real collector.

The agents (``js/agent.cjs``, one Node process under the Node OpenTelemetry SDK: HTTP and Express
instrumentation, OTLP to the collector; ``make polyglot-js`` installs them with ``npm ci``) keep,
forget or move their conversations, each with HTTP spans only or with the ``resumed`` contract
(``+resumed``: a few lines of their own OpenTelemetry code). Each request records the history the
agent really saw (the ground truth). The callers are the orchestrator's Agent Framework
``A2AAgent`` and its direct a2a-sdk client, under our plugin. Checked both ways, per delegation:

- HTTP spans only: turn 1 ``first_turn``; a reply in another context ``context_changed`` (read
  from the caller's send span); else ``state_unknown`` (no state verdict without ``resumed``),
  never a mismatch nor ``no_callee``, counted in ``agent_identity_state_unknown``;
- with ``resumed``: ``continued`` when the agent saw prior messages, ``state_not_resumed`` when it
  did not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import a2a_harness as h
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "collector"))
import collector_support as cs

pytestmark = [pytest.mark.e2e, pytest.mark.collector]

JS = Path(__file__).with_name("js")
AGENTS = ("keeps", "forgets", "moves", "keeps+resumed", "forgets+resumed")
TURNS = 3
# agent_identity.hop.mismatch per result: state_unknown is no verdict (absent), neither flagged nor healthy
MISMATCH = {
    "first_turn": False,
    "continued": False,
    "context_changed": True,
    "state_not_resumed": True,
    "state_unknown": None,
}


def _missing() -> str:
    if not shutil.which("node"):
        return "node is not installed (make polyglot-js)"
    if not (JS / "node_modules" / "@a2a-js" / "sdk").is_dir():
        return "tests/polyglot/js has no node_modules (make polyglot-js)"
    return ""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The collector (single-node config, shipped join defaults) and the JS agents; yields
    ``(collector, {spec: url}, truth_file)``."""
    if reason := _missing():
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("polyglot-js")
    collector = cs.start_collector("single-node.yaml", work)
    truth = work / "truth.jsonl"
    ports = {spec: h.free_port() for spec in AGENTS}
    args = [arg for spec, port in ports.items() for arg in ("--agent", f"{spec}={port}")]
    env = dict(
        os.environ,
        OTEL_SERVICE_NAME="js-agents",
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="200",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
        AGENT_TRUTH=str(truth),
    )
    log = work / "js-agents.log"
    with open(log, "wb") as out:
        cmd = ["node", "--require", "./otel.cjs", "agent.cjs", *args]
        proc = subprocess.Popen(cmd, cwd=JS, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        for port in ports.values():
            h.wait_port(port, proc, timeout=120)
        yield collector, {spec: f"http://127.0.0.1:{port}/" for spec, port in ports.items()}, truth
    finally:
        h.stop(proc)  # SIGTERM: otel.cjs flushes
        collector.stop()


def _expected(spec: str, record: dict, counts: list[int]) -> str:
    """The verdict the agent's ground truth calls for, as far as its telemetry lets the collector
    judge: state continuity needs ``resumed``."""
    want = h.expected_result(record, counts)
    if "+resumed" not in spec and want in ("continued", "state_not_resumed"):
        return "state_unknown"
    return want


def _judged(collector, traces: set[str]) -> list:
    """Every span the collector wrote, once each of ``traces`` has its hop verdict (bounded)."""

    def ready():
        spans = h.read_spans(collector.spans_file)
        return spans if traces <= {s.trace_id for s in h.hop_spans(spans)} else None

    return cs.wait_for(ready, 120, "a verdict on every delegation")


@pytest.mark.parametrize("direct", [False, True], ids=["a2a_agent", "a2a_sdk_client"])
def test_js_agent_hops_judged_both_ways(world, direct):
    collector, urls, truth_file = world
    records, _ = h.run_orchestrator(list(urls.items()), collector.endpoint, turns=TURNS, direct=direct)
    assert len(records) == TURNS * len(AGENTS), records
    spans = _judged(collector, {rec["trace_id"] for rec in records})
    truth: dict[str, list[int]] = {}
    for line in truth_file.read_text().splitlines():
        rec = json.loads(line)
        truth.setdefault(rec["trace_id"], []).append(rec["messages"])
    got, want, mismatch = {}, {}, {}
    for rec in records:
        key = (rec["specialist"], rec["turn"])
        hops = [s for s in h.hop_spans(spans) if s.trace_id == rec["trace_id"]]
        assert len(hops) == 1, (key, hops)
        got[key] = hops[0].attributes["agent_identity.hop.result"]
        want[key] = _expected(rec["specialist"], rec, truth[rec["trace_id"]])
        mismatch[key] = hops[0].attributes.get("agent_identity.hop.mismatch")
    assert got == want
    assert mismatch == {key: MISMATCH[result] for key, result in want.items()}
    # Every judgeable kind of verdict was seen, so the test cannot pass on one answer alone.
    assert {"first_turn", "context_changed", "state_unknown", "continued", "state_not_resumed"} <= set(want.values())
    kinds = {s.attributes.get("agent_identity.hop.callee.kind") for s in h.hop_spans(spans)}
    assert "http" in kinds
    assert not [s for s in spans if s.attributes.get("agent_identity.hop.result") == "no_callee"]


def test_state_unknown_counted_per_callee(world):
    """After the two callers (module order): every state_unknown hop is counted, by callee kind."""
    collector, _, _ = world
    spans = h.read_spans(collector.spans_file)
    n = sum(1 for s in h.hop_spans(spans) if s.attributes["agent_identity.hop.result"] == "state_unknown")
    assert n > 0

    def counted() -> bool:
        return h.metric_sum(h.scrape(collector.metrics_port), "agent_identity_state_unknown", callee_kind="http") == n

    cs.wait_for(counted, 30, f"agent_identity_state_unknown == {n}")
