"""A delegate that forgets is caught whatever framework serves it (issue 21). A2A specialists
whose agent runs on LangGraph, Agno, the OpenAI Agents SDK and LlamaIndex (``examples/framework_specialists.py``),
each its own process under ``opentelemetry-instrument``, one that continues and one that forgets
per framework, plus the healthy shapes a naive rule would flag (a stateless LangGraph graph fed the
whole history by its server; OpenAI Agents continuing through ``previous_response_id`` against a
local Responses stand-in; two replicas of one Agno specialist sharing one SQLite db, the turns
alternating between them) and the one a naive rule would miss (an Agno db whose history never
reaches the model). Each is asked to continue by an Agent Framework ``A2AAgent`` caller and by a
direct a2a-sdk caller, through the real collector. The verdict on every hop must equal the ground
truth, the number of messages the callee's own model saw: every forgotten turn flagged, every
continued and every first turn not.

Needs the collector binary: ``AGENT_IDENTITY_COLLECTOR`` (``make test-python`` sets it)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import a2a_harness as h
import pytest
from framework_specialists import CONTINUES

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR")
TURNS = 3
REPLICAS = "agno-replicas"  # two agno-session processes on one SQLite file
RESUMED = "agent_identity.conversation.resumed"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("frameworks")
    truth, db = work / "truth.jsonl", work / "replicas.db"
    plan = [(shape, shape, None) for shape in CONTINUES] + [(REPLICAS, "agno-session", db)] * 2
    with h.collector_run(COLLECTOR, work) as (collector, procs):
        with ThreadPoolExecutor(4) as pool:  # processes start in parallel: each imports its framework
            started = list(
                pool.map(
                    lambda p: h.start_specialist(
                        p[0], collector.endpoint, shape=p[1], truth=truth, db=p[2], AGNO_TELEMETRY="false"
                    ),
                    plan,
                )
            )
        procs.extend(proc for proc, _ in started)
        urls: dict[str, list[str]] = {}
        for (service, _shape, _db), (_proc, url) in zip(plan, started, strict=False):
            urls.setdefault(service, []).append(url)
        specialists = [(service, ",".join(u)) for service, u in urls.items()]
        records = h.run_both_callers(specialists, collector.endpoint, TURNS)
        spans = h.wait_for_hops(collector.spans_file, len(records["a2a_agent"] + records["direct"]))
        yield records, spans, h.read_truth(truth)


def _continues(service: str) -> bool:
    return True if service == REPLICAS else CONTINUES[service]


@pytest.mark.parametrize("caller", ["a2a_agent", "direct"])
def test_the_specialists_really_continue_or_forget(run, caller):
    records, _, truth = run
    for rec in records[caller]:
        assert rec["error"] is None, rec
        (seen,) = truth[rec["trace_id"]]
        want = 1 + 2 * (rec["turn"] - 1) if _continues(rec["specialist"]) else 1
        assert seen == want, rec


@pytest.mark.parametrize("caller", ["a2a_agent", "direct"])
def test_every_verdict_is_the_ground_truth(run, caller):
    records, spans, truth = run
    hops = {s.trace_id: s for s in h.hop_spans(spans)}
    got, want = {}, {}
    for rec in records[caller]:
        hop = hops[rec["trace_id"]]
        got[rec["specialist"], rec["turn"]] = hop.attributes["agent_identity.hop.result"]
        want[rec["specialist"], rec["turn"]] = h.expected_result(rec, truth[rec["trace_id"]])
    assert got == want
    # both ways, per framework: first turns, continued turns and every forgotten turn flagged
    assert {w for (service, turn), w in want.items() if turn == 1} == {"first_turn"}
    for service in [*CONTINUES, REPLICAS]:
        later = {want[service, turn] for turn in range(2, TURNS + 1)}
        assert later == ({"continued"} if _continues(service) else {"state_not_resumed"}), service


def test_the_serving_agent_span_records_where_resumed_came_from(run):
    records, spans, _ = run
    by_trace: dict[str, list] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    providers = {"langgraph": "langgraph", "agno": "agno", "openai": "openai", "llama": "llama_index"}
    for rec in records["a2a_agent"] + records["direct"]:
        service = rec["specialist"]
        (agent,) = [s for s in by_trace[rec["trace_id"]] if s.service == service and s.name.startswith("invoke_agent")]
        assert agent.attributes["gen_ai.provider.name"] == providers[service.split("-")[0]]
        assert agent.attributes[RESUMED] is (rec["turn"] > 1 and _continues(service)), rec


def test_a_forgetful_specialist_is_remembered_to_have_rebuilt_its_conversation(run):
    """The serving side's memory: a contextId served under another agent conversation than last
    time is marked with the previous one, from the second turn of a context on."""
    records, spans, _ = run
    marked = {
        (s.service, s.trace_id)
        for s in spans
        if "agent_identity.conversation.previous_id" in s.attributes and s.name.startswith("invoke_agent")
    }
    for rec in records["a2a_agent"] + records["direct"]:
        service = rec["specialist"]
        rebuilds = service in ("langgraph-new-thread", "agno-new-session")  # a new agent conversation per request
        assert ((service, rec["trace_id"]) in marked) is (rebuilds and rec["turn"] > 1), rec
