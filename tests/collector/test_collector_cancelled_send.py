# SPDX-License-Identifier: Apache-2.0
"""End to end through the built collector: a send the caller cancels (``asyncio.wait_for``, 1 s)
before the answer of a callee that takes 3 s is a lost response; the same send without a timeout
is not.

The callee (``examples/charge_specialist.py --hold-each``, a real a2a-sdk server on 127.0.0.1)
completes the work at once and holds every response 3 s; its record of the charges it made is the
ground truth of the callee's side. The caller (``cancel_caller.py``, a direct a2a-sdk send or an
Agent Framework ``A2AAgent`` run) records whether it received the answer. The caller's CLIENT span
of the cancelled send keeps status UNSET (cancellation is no error) and carries
``agent_identity.send.cancelled=true``, which the processor reads as a send that failed before its
answer: ``agent_identity.hop.response_lost=true`` and ``agent_identity_lost_responses`` 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import a2a_harness as h
import collector_support as cs
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.collector]

SERVER = 2  # OTLP span kind
CALLER = Path(__file__).with_name("cancel_caller.py")
MODES = ("direct", "agent")
# groupbytrace's wait, from a trace's first span: the callee's SERVER span leaves after its 3 s hold
WAIT = "8s"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    work = tmp_path_factory.mktemp("cancelled")
    collector = cs.start_collector("single-node.yaml", work, GROUPBYTRACE_WAIT=WAIT)
    proc = None
    try:
        charges = work / "charges.jsonl"
        proc, url = h.start_charge_specialist(
            "payments", collector.endpoint, charges, idempotent=False, hold=3.0, hold_each=True
        )
        records = {}
        for mode in MODES:
            cmd = [str(h.LAUNCHER), sys.executable, str(CALLER), "--url", url, "--mode", mode, "--timeout", "1"]
            cmd += ["--charges", str(charges)]
            env = h.otel_env(f"{mode}-caller", collector.endpoint)
            run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr[-3000:]
            records[mode] = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
            assert len(records[mode]) == 2, run.stdout

        def judged():
            spans = cs.read_spans(collector.spans_file)
            entries = [s for s in spans if s.kind == SERVER and s.service == "payments"]
            if len([s for s in entries if "agent_identity.hop.result" in s.attributes]) < 2 * len(MODES):
                return None
            return spans, h.scrape(collector.metrics_port)

        spans, samples = cs.wait_for(judged, 120, "the four sends judged")
        yield dict(records=records, spans=spans, samples=samples, charges=h.read_charges(charges))
    finally:
        if proc is not None:
            h.stop(proc)
        collector.stop()


def _entry(world, trace_id: str):
    (entry,) = [s for s in world["spans"] if s.kind == SERVER and s.trace_id == trace_id]
    return entry


@pytest.mark.parametrize("mode", MODES)
def test_send_cancelled_before_its_answer_is_a_lost_response(world, mode):
    cancelled, waited = world["records"][mode]
    # ground truth: the callee did the work of both sends; the caller got only the second answer
    charged = {c["trace_id"] for c in world["charges"]}
    assert {cancelled["trace_id"], waited["trace_id"]} <= charged
    assert cancelled["timeout"] == 1 and not cancelled["answered"]
    assert waited["timeout"] is None and waited["answered"]
    client = [
        s
        for s in world["spans"]
        if s.trace_id == cancelled["trace_id"]
        and s.service == f"{mode}-caller"
        and "agent_identity.send.cancelled" in s.attributes
    ]
    assert [s.attributes["agent_identity.send.cancelled"] for s in client] == [True]
    lost, answered = _entry(world, cancelled["trace_id"]), _entry(world, waited["trace_id"])
    assert lost.attributes.get("agent_identity.hop.response_lost") is True
    assert "agent_identity.hop.response_lost" not in answered.attributes
    # judged like a timed-out send: against the context the callee answered in
    assert (
        lost.attributes["agent_identity.hop.result"] == answered.attributes["agent_identity.hop.result"] == "first_turn"
    )
    assert h.metric_sum(world["samples"], "agent_identity_lost_responses", caller_service=f"{mode}-caller") == 1
