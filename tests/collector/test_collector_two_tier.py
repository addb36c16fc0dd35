# SPDX-License-Identifier: Apache-2.0
"""End to end, two tiers: tier 1 (collector-config/tier1-loadbalancer.yaml) routes by trace id to
two tier-2 instances (tier2-identity.yaml); each trace, sent by two Python processes, must land whole
on one tier-2 instance and be checked there."""

from __future__ import annotations

from collections import Counter

import collector_support as cs
import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.collector,
]

TRACES = 6
SPANS_PER_TRACE = 5  # caller: agent + client span; callee: server, agent, chat


def test_one_trace_reaches_one_tier2_instance(tmp_path):
    tier2 = []
    tier1 = None
    try:
        for name in ("tier2-a", "tier2-b"):
            # the shipped wait (5 s): each trace's halves come from two Python processes, which a
            # loaded machine can start more than the tests' usual 1 s apart
            tier2.append(cs.start_collector("tier2-identity.yaml", tmp_path, name=name, GROUPBYTRACE_WAIT="5s"))
        endpoints = ", ".join(f"127.0.0.1:{c.otlp_grpc}" for c in tier2)
        tier1 = cs.start_collector("tier1-loadbalancer.yaml", tmp_path, name="tier1", TIER2_ENDPOINTS=f"[{endpoints}]")
        expected = {}
        for i in range(TRACES):
            forgetful = i % 2 == 1
            conv = f"conv-{i}"
            trace_id = cs.send_trace(
                tier1.endpoint,
                service="orchestrator",
                conversation=conv,
                context_id=conv,
                callee_service="specialist",
                callee_conversation=f"other-{i}" if forgetful else conv,
            )
            expected[trace_id] = "context_changed" if forgetful else "continued"

        def all_checked():
            per_instance = [cs.read_spans(c.spans_file) for c in tier2]
            marked = [s for spans in per_instance for s in spans if "agent_identity.hop.result" in s.attributes]
            return per_instance if len(marked) >= TRACES else None

        per_instance = cs.wait_for(all_checked, 40, "every trace checked on tier 2")
        for trace_id, result in expected.items():
            counts = [sum(s.trace_id == trace_id for s in spans) for spans in per_instance]
            assert sorted(counts) == [0, SPANS_PER_TRACE], f"trace {trace_id} split across tier 2: {counts}"
            spans = per_instance[counts.index(SPANS_PER_TRACE)]
            results = Counter(s.attributes.get("agent_identity.hop.result") for s in spans if s.trace_id == trace_id)
            assert results == Counter({None: SPANS_PER_TRACE - 1, result: 1}), trace_id
    finally:
        if tier1 is not None:
            tier1.stop()
        for c in tier2:
            c.stop()
