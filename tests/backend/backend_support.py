"""Shared by the backend tests: the collector under test and the stack's record of ground truth."""

from __future__ import annotations

import os
from dataclasses import dataclass

import a2a_harness as h
import zipkin_backend as zb

COLLECTOR = os.environ.get("AGENT_IDENTITY_COLLECTOR", "")
SESSIONS_OVERLAY = h.ROOT / "collector-config" / "backends" / "sessions.yaml"
CORRECT, FORGETFUL = "specialist", "forgetful-specialist"


def collector_missing() -> str:
    if not COLLECTOR or not os.access(COLLECTOR, os.X_OK):
        return "AGENT_IDENTITY_COLLECTOR is not an executable collector (make collector; make test-python sets it)"
    return ""


@dataclass
class Stack:
    zipkin: zb.Zipkin
    records: list[dict]            # the orchestrator's delegation records: the ground truth
    conversations: dict[str, str]  # orchestrator conversation id -> specialist name
    spans: list[h.Span]            # what the collector's file exporter wrote

    def traces_of(self, specialist: str) -> set[str]:
        return {r["trace_id"] for r in self.records if r["conversation"] == specialist}

    def conversation_of(self, specialist: str) -> str:
        return next(c for c, name in self.conversations.items() if name == specialist)
