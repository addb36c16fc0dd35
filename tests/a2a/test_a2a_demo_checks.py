"""`make demo` fails when the collector's verdict disagrees with the ground truth (checked on
hand-made hop spans and truth records)."""

from __future__ import annotations

import a2a_harness as h
import demo

RECORDS = [
    {"specialist": "session-local", "turn": 1, "attempt": 1, "trace_id": "t1", "requested": None},
    {"specialist": "session-local", "turn": 2, "attempt": 1, "trace_id": "t2", "requested": "c1"},
    {"specialist": "session-local", "turn": 2, "attempt": 2, "trace_id": "t2", "requested": "c1"},
    {"specialist": "a2a-executor", "turn": 1, "attempt": 1, "trace_id": "t3", "requested": None},
    {"specialist": "a2a-executor", "turn": 2, "attempt": 1, "trace_id": "t4", "requested": "c2"},
]
TRUTH = {"t1": [1], "t2": [3, 5], "t3": [1], "t4": [1]}


def _hop(service, trace_id, span_id, result, duplicate=False):
    a = {"agent_identity.hop.caller.service.name": "orchestrator", "agent_identity.hop.result": result}
    if result in ("continued", "first_turn", "state_not_resumed", "context_changed"):
        a["agent_identity.hop.mismatch"] = result in ("state_not_resumed", "context_changed")
    if duplicate:
        a["agent_identity.delegation.duplicate"] = True
    return h.Span(service, "SendMessage", 2, trace_id, span_id, "p", a)


def _spans(first="first_turn", kept="continued", forgot="state_not_resumed", duplicate=True):
    return [
        _hop("session-local", "t1", "a", first),
        _hop("session-local", "t2", "b", kept),
        _hop("session-local", "t2", "c", "continued", duplicate),
        _hop("a2a-executor", "t3", "d", "first_turn"),
        _hop("a2a-executor", "t4", "e", forgot),
    ]


def test_verdicts_equal_to_the_truth_have_no_problem(capsys):
    assert demo.report(RECORDS, _spans(), TRUTH, "A2AAgent") == []
    assert demo.check_duplicates(RECORDS, _spans()) == []
    out = capsys.readouterr().out
    assert "DUPLICATE" in out and "FORGOT" in out


def test_a_missed_forgetful_turn_is_a_problem():
    assert any("FORGOT" in p for p in demo.report(RECORDS, _spans(forgot="continued"), TRUTH, "A2AAgent"))


def test_a_false_alarm_is_a_problem():
    assert any("continued" in p for p in demo.report(RECORDS, _spans(kept="context_changed"), TRUTH, "A2AAgent"))


def test_a_flagged_first_turn_is_a_problem():
    assert demo.report(RECORDS, _spans(first="context_changed"), TRUTH, "A2AAgent")


def test_missing_duplicate_is_a_problem():
    assert any("duplicate" in p for p in demo.check_duplicates(RECORDS, _spans(duplicate=False)))


def test_expected_counts_follow_the_truth():
    assert demo.expected_counts(RECORDS, TRUTH) == {"a2a-executor": 1}


def test_expected_counts_per_caller_follow_the_truth():
    records = [dict(r, caller="agno-app" if r["specialist"] == "a2a-executor" else "orchestrator") for r in RECORDS]
    assert demo.expected_counts(records, TRUTH, by="caller") == {"agno-app": 1}
