# SPDX-License-Identifier: Apache-2.0
"""Callees that also run ASGI/Starlette server tracing (opentelemetry-instrumentation-starlette, what
``opentelemetry-bootstrap`` installs for a Starlette app), judged by the real collector with the
shipped single-node config.

Each specialist (``examples/specialist.py``, a2a-sdk's JSON-RPC routes on Starlette, under
``opentelemetry-instrument`` with the Starlette instrumentation on and our plugin) has the HTTP SERVER
span as its entry span, and our A2A SERVER span below it. The collector reads the callee's side from
ours (requested, answered, ``resumed``), not from the bare HTTP span:

- ``plain``: a plain a2a-sdk executor keeping each context's history, declaring
  ``otel_agent_identity.resumed(...)``: turns 2 and 3 ``continued``;
- ``plain-forgets``: one that keeps nothing and declares ``resumed(False)``: ``state_not_resumed``,
  flagged and counted (before: ``state_unknown``, read as an A2A semconv callee);
- ``plain-undeclared``: ``plain`` without the declaration: ``state_unknown``, callee kind
  ``agent_identity``, counted in ``agent_identity_state_unknown`` (no state verdict without
  ``resumed``);
- ``session-service``: an Agent Framework agent on a service-managed model below our SERVER span (its
  own conversation is a thread id, not the contextId): ``continued`` (before: a false
  ``context_changed``, the thread id read as the context answered in).

Callers: the orchestrator's Agent Framework ``A2AAgent`` and its direct a2a-sdk client, three turns
each. Ground truth: what each executor or model really saw (its ``--truth`` file), checked both ways.
``A2AAgent``'s Agent Card GETs, which Starlette traces too, are no hops.
"""

from __future__ import annotations

import threading

import a2a_harness as h
import collector_support as cs
import pytest
from specialist import CONTINUES

pytestmark = [pytest.mark.e2e, pytest.mark.collector]

SHAPES = ("plain", "plain-forgets", "plain-undeclared", "session-service")
TURNS = 3
#: the launcher with every installed instrumentation on (the harness turns Starlette's off)
ASGI_ON = {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": None}
#: agent_identity.hop.mismatch per result (state_unknown: no verdict, absent)
MISMATCH = {"first_turn": False, "continued": False, "state_not_resumed": True, "state_unknown": None}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The collector (shipped single-node config and join defaults), one specialist per shape, both
    callers; yields ``(collector, records, spans, truth)``, each record with its ``caller``."""
    work = tmp_path_factory.mktemp("asgi-callee")
    truth_file = work / "truth.jsonl"
    collector = cs.start_collector("single-node.yaml", work)
    procs = []
    try:
        specialists = []
        for shape in SHAPES:
            proc, url = h.start_specialist(shape, collector.endpoint, shape=shape, truth=truth_file, **ASGI_ON)
            procs.append(proc)
            specialists.append((shape, url))
        runs = h.run_both_callers(specialists, collector.endpoint, TURNS)
        records = [{**rec, "caller": caller} for caller, recs in runs.items() for rec in recs]
        traces = {rec["trace_id"] for rec in records}

        def judged():
            spans = h.read_spans(collector.spans_file)
            return spans if traces <= {s.trace_id for s in h.hop_spans(spans)} else None

        spans = cs.wait_for(judged, 120, "a verdict on every delegation")
        yield collector, records, spans, h.read_truth(truth_file)
    finally:
        for proc in procs:
            h.stop(proc)
        collector.stop()


def _expected(rec: dict, counts: list[int]) -> str:
    """The verdict the ground truth calls for; without a ``resumed`` signal, no state verdict."""
    want = h.expected_result(rec, counts)
    if rec["specialist"] == "plain-undeclared" and want in ("continued", "state_not_resumed"):
        return "state_unknown"
    return want


def _hop(spans: list[h.Span], trace_id: str) -> h.Span:
    (hop,) = [s for s in h.hop_spans(spans) if s.trace_id == trace_id]
    return hop


def test_the_entry_span_is_the_http_server_span_over_ours(world):
    """The shape under test is real: each hop's entry span is Starlette's HTTP SERVER span, and our
    A2A SERVER span (with ``a2a.method.name``) is its child in the callee's service."""
    _, records, spans, _ = world
    assert len(records) == 2 * TURNS * len(SHAPES), records
    for rec in records:
        hop = _hop(spans, rec["trace_id"])
        assert hop.kind == 2 and "a2a.method.name" not in hop.attributes, hop  # SPAN_KIND_SERVER
        assert {"http.method", "http.request.method"} & set(hop.attributes), hop
        ours = [s for s in spans if s.parent_id == hop.span_id and s.service == hop.service and s.kind == 2]
        assert [s.attributes.get("a2a.method.name") for s in ours] in (["SendMessage"], ["SendStreamingMessage"]), ours


def test_agent_card_fetches_are_no_hops(world):
    """``A2AAgent`` fetches each specialist's Agent Card: Starlette traces that GET as a SERVER span
    under the caller's CLIENT span, and the collector leaves it unjudged (discovery, not a hop)."""
    _, _, spans, _ = world
    cards = [s for s in spans if s.kind == 2 and str(s.attributes.get("http.target")).endswith("/agent-card.json")]
    assert {s.service for s in cards} == set(SHAPES), cards
    assert not [s for s in cards if "agent_identity.hop.result" in s.attributes], cards
    assert not [s for s in h.hop_spans(spans) if s.attributes["agent_identity.hop.result"] == "not_required"]


def test_verdicts_equal_what_each_executor_saw(world):
    _, records, spans, truth = world
    got, want, mismatch = {}, {}, {}
    for rec in records:
        key = (rec["specialist"], rec["caller"], rec["turn"])
        counts = truth[rec["trace_id"]]
        # the shape is what it claims: 1, 3, 5 messages seen when it continues, 1, 1, 1 when it forgets
        assert counts == [2 * rec["turn"] - 1 if CONTINUES[rec["specialist"]] else 1], (key, counts)
        attrs = _hop(spans, rec["trace_id"]).attributes
        got[key], want[key] = attrs["agent_identity.hop.result"], _expected(rec, counts)
        mismatch[key] = attrs.get("agent_identity.hop.mismatch")
        if got[key] == "state_unknown":
            assert attrs["agent_identity.hop.callee.kind"] == "agent_identity", (key, attrs)
        else:
            assert "agent_identity.hop.callee.kind" not in attrs, (key, attrs)  # ours: never a2a_semconv
    assert got == want
    assert mismatch == {key: MISMATCH[result] for key, result in want.items()}
    # every kind of verdict is there, so the test cannot pass on one answer alone
    assert set(want.values()) == {"first_turn", "continued", "state_not_resumed", "state_unknown"}


def test_forgotten_turns_counted_as_mismatches_and_undeclared_ones_as_state_unknown(world):
    collector = world[0]
    later = 2 * (TURNS - 1)  # turns 2 and 3, from each of the two callers

    def counted():
        samples = h.scrape(collector.metrics_port)
        figures = {
            "forgets": h.metric_sum(
                samples, "agent_identity_mismatches", callee_service="plain-forgets", reason="state_not_resumed"
            ),
            "all_mismatches": h.metric_sum(samples, "agent_identity_mismatches"),
            "unknown": h.metric_sum(
                samples, "agent_identity_state_unknown", callee_service="plain-undeclared", callee_kind="agent_identity"
            ),
            "all_unknown": h.metric_sum(samples, "agent_identity_state_unknown"),
        }
        want = {"forgets": later, "all_mismatches": later, "unknown": later, "all_unknown": later}
        return figures if figures == want else None

    cs.wait_for(counted, 60, "the mismatches and state_unknown hops counted")


# -- a delegation retried after a crash, to a callee under Starlette's tracing -----------------------
#: the checkout callers of the crash-retry (examples/checkout_orchestrator.py, run twice by
#: a2a_harness.run_recovery) -> their allowlist: the specialist's URL (it receives the delegation id
#: and marks its own retry) or none (a fresh message id: only the collector's delegation memory finds it)
RETRY_CALLERS = {"retry-allowlisted": None, "retry-unlisted": ""}
DUPLICATE = "agent_identity.delegation.duplicate"
#: groupbytrace's wait: the specialist's SERVER spans leave after its 3 s hold (test_collector_recovery)
RETRY_WAIT = "8s"


@pytest.fixture(scope="module", params=["single-node", "two-tier"])
def retried(request, tmp_path_factory):
    """Per caller of :data:`RETRY_CALLERS`, a naive charge specialist (``examples/charge_specialist.py``,
    Starlette tracing on) and the crash-retry against it; yields ``(topology, records, spans, charges,
    judges)`` once both attempts of every caller were judged. ``records``: caller -> both checkout
    records; ``charges``: caller -> the charges its specialist really made (ground truth); ``judges``:
    the collectors that judge."""
    work = tmp_path_factory.mktemp(f"asgi-retry-{request.param}")
    collectors, procs = [], []
    try:
        collectors, judges, endpoint = cs.start_topology(request.param, work, GROUPBYTRACE_WAIT=RETRY_WAIT)
        records, errors, threads = {}, [], []
        for caller, allowlist in RETRY_CALLERS.items():
            proc, url = h.start_charge_specialist(
                f"payments-{caller}", endpoint, work / f"{caller}.jsonl", idempotent=False, **ASGI_ON
            )
            procs.append(proc)

            def recover(caller=caller, url=url, allowlist=allowlist):
                try:
                    db = work / f"{caller}.sqlite"
                    records[caller] = h.run_recovery(url, db, endpoint, caller, allowlist=allowlist)
                except Exception as exc:
                    errors.append((caller, exc))

            threads.append(threading.Thread(target=recover))
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
        traces = {rec["trace_id"] for recs in records.values() for rec in recs}

        def judged():
            spans = [s for c in judges for s in h.read_spans(c.spans_file)]
            return spans if traces <= {s.trace_id for s in h.hop_spans(spans)} else None

        spans = cs.wait_for(judged, 120, "a verdict on every attempt")
        charges = {caller: h.read_charges(work / f"{caller}.jsonl") for caller in RETRY_CALLERS}
        yield request.param, records, spans, charges, judges
    finally:
        for proc in procs:
            h.stop(proc)
        for c in reversed(collectors):
            c.stop()


def _one_judge(judges, records: list[dict]) -> bool:
    """Whether both attempts' traces reached one judging collector (two tiers route by trace id)."""
    return any({r["trace_id"] for r in records} <= {s.trace_id for s in h.read_spans(c.spans_file)} for c in judges)


def test_crash_retry_under_starlette_is_one_duplicate_marked_and_counted_once(retried):
    """Ground truth: each specialist charged twice (two executions, one duplicate). The callee's side
    is two SERVER spans a request (Starlette's ``POST /`` over ours); the duplicate is marked on one
    span and counted once: allowlisted, on our A2A SERVER span (the serving process's mark, also in two
    tiers); unlisted, on the entry span (the collector's delegation memory, which in two tiers finds it
    only when both traces reach one tier-2 instance, the documented limit; never a false one)."""
    topology, records, spans, charges, judges = retried
    expected = {}  # caller -> duplicate executions marked
    for caller, recs in records.items():
        first, second = recs
        assert first["delegation_id"] == second["delegation_id"] and first["trace_id"] != second["trace_id"]
        assert len({c["execution"] for c in charges[caller]}) == 2, charges[caller]  # it charged twice
        hops = {hop.trace_id: hop for hop in h.hop_spans(spans) if hop.trace_id in {r["trace_id"] for r in recs}}
        for hop in hops.values():  # the shape under test: an HTTP entry span over our A2A SERVER span
            assert {"http.method", "http.request.method"} & set(hop.attributes), hop
        ours = {s.trace_id: s for s in spans if s.parent_id in {hop.span_id for hop in hops.values()} and s.kind == 2}
        assert set(ours) == set(hops), ours
        marked = [s for s in spans if s.trace_id in hops and s.attributes.get(DUPLICATE) is True]
        if RETRY_CALLERS[caller] is None:
            want = [ours[second["trace_id"]]]
        elif topology == "single-node" or _one_judge(judges, recs):
            want = [hops[second["trace_id"]]]
        else:
            want = []
        assert [s.span_id for s in marked] == [s.span_id for s in want], (caller, marked)
        expected[caller] = len(want)

    def counted():
        samples = [x for c in judges for x in h.scrape(c.metrics_port)]
        got = {c: h.metric_sum(samples, "agent_identity_duplicate_executions", caller_service=c) for c in records}
        return got if got == expected else None

    cs.wait_for(counted, 60, f"the duplicate executions counted once each: {expected}")
