"""`make demo` fails when the collector's verdict is wrong (checked on hand-made hop spans)."""

from __future__ import annotations

import a2a_harness as h
import demo

RECORDS = [
    {"conversation": "specialist", "turn": 1, "attempt": 1, "trace_id": "t1", "context_id": "c1"},
    {"conversation": "specialist", "turn": 2, "attempt": 1, "trace_id": "t2", "context_id": "c1"},
    {"conversation": "specialist", "turn": 2, "attempt": 2, "trace_id": "t2", "context_id": "c1"},
    {"conversation": "forgetful-specialist", "turn": 1, "attempt": 1, "trace_id": "t3", "context_id": "c2"},
]


def _hop(service, trace_id, span_id, result, duplicate=False):
    a = {"agent_identity.hop.caller.service.name": "orchestrator", "agent_identity.hop.result": result}
    if result in ("continued", "mismatch"):
        a["agent_identity.hop.mismatch"] = result == "mismatch"
    if duplicate:
        a["agent_identity.delegation.duplicate"] = True
    return h.Span(service, "SendMessage", 2, trace_id, span_id, "p", a)


def _spans(forgetful="mismatch", correct="continued", duplicate=True):
    return [
        _hop("specialist", "t1", "a", correct),
        _hop("specialist", "t2", "b", "continued"),
        _hop("specialist", "t2", "c", "continued", duplicate),
        _hop("forgetful-specialist", "t3", "d", forgetful),
    ]


def test_expected_outcome_has_no_problem(capsys):
    assert demo.report(RECORDS, _spans()) == []
    assert "DUPLICATE" in capsys.readouterr().out


def test_unflagged_forgetful_hop_is_a_problem():
    assert any("forgetful hop" in p for p in demo.report(RECORDS, _spans(forgetful="continued")))


def test_flagged_correct_hop_is_a_problem():
    assert any("correct hop" in p for p in demo.report(RECORDS, _spans(correct="mismatch")))


def test_missing_duplicate_is_a_problem():
    assert any("duplicate" in p for p in demo.report(RECORDS, _spans(duplicate=False)))
