"""Shared by the backend tests: the collector under test and the stack's record of ground truth."""

from __future__ import annotations

import os
from dataclasses import dataclass

import a2a_harness as h
import zipkin_backend as zb

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR", "")
SESSIONS_OVERLAY = h.ROOT / "collector-config" / "backends" / "sessions.yaml"
# three of the demo's specialist shapes (examples/specialist.py), each its own service of that name:
# one that continues, and two that forget in different ways
CONTINUES = "session-local"  # one AgentSession per contextId: continues (the retried turn goes here)
CHANGED = "plain-new-context"  # answers every request in a new contextId
NOT_RESUMED = "a2a-executor"  # Agent Framework's A2AExecutor: keeps the contextId, loses the state
SPECIALISTS = (CONTINUES, CHANGED, NOT_RESUMED)
FORGETFUL = (CHANGED, NOT_RESUMED)
FLAGGED = ("context_changed", "state_not_resumed")


def collector_missing() -> str:
    if not COLLECTOR or not os.access(COLLECTOR, os.X_OK):
        return "AGENT_IDENTITY_COLLECTOR is not an executable collector (make collector; make test-python sets it)"
    return ""


@dataclass
class Stack:
    zipkin: zb.Zipkin
    records: list[dict]  # the orchestrator's delegation records (a2a_harness.run_orchestrator)
    truth: dict[str, list[int]]  # trace id -> messages the specialist's model saw (a2a_harness.read_truth)
    conversations: dict[str, str]  # orchestrator conversation id -> specialist name
    spans: list[h.Span]  # what the collector's file exporter wrote

    def traces_of(self, specialist: str) -> set[str]:
        return {r["trace_id"] for r in self.records if r["conversation"] == specialist}

    def conversation_of(self, specialist: str) -> str:
        return next(c for c, name in self.conversations.items() if name == specialist)

    def expected(self, record: dict) -> str:
        """The verdict the ground truth calls for on this send (a2a_harness.expected_result): the
        model's message count in the send's trace, one per execution in order for a re-send."""
        counts = self.truth.get(record["trace_id"], [])
        sends = [r for r in self.records if r["trace_id"] == record["trace_id"]]
        if len(counts) == len(sends) > 1:
            counts = counts[record["attempt"] - 1 : record["attempt"]]
        return h.expected_result(record, counts)

    def flagged_traces(self, reason: str | None = None) -> set[str]:
        """Traces with a send the ground truth says forgot (for ``reason``, or for either reason)."""
        return {
            r["trace_id"] for r in self.records if self.expected(r) in FLAGGED and reason in (None, self.expected(r))
        }
