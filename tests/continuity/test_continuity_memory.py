"""The bounded memories of otel_agent_identity.continuity and the metrics module's label bounds."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from metric_points import metric_points
from otel_agent_identity import continuity, metrics


def test_delegate_contexts_are_bounded_by_conversations_and_agents():
    memory = continuity.DelegateContexts(max_conversations=3)
    for i in range(5):
        memory.remember(f"conv-{i}", "weather", f"ctx-{i}")
    assert len(memory) == 3
    assert memory.last("conv-0", "weather") is None and memory.last("conv-4", "weather") == "ctx-4"
    for j in range(continuity.MAX_AGENTS_PER_CONVERSATION + 2):
        memory.remember("conv-4", f"agent-{j}", f"c-{j}")
    assert memory.last("conv-4", "weather") is None  # the least recently used agent went first
    assert memory.last("conv-4", f"agent-{continuity.MAX_AGENTS_PER_CONVERSATION + 1}") is not None


def test_least_recently_used_conversation_goes_first():
    memory = continuity.DelegateContexts(max_conversations=2)
    memory.remember("a", "x", "1")
    memory.remember("b", "x", "2")
    memory.remember("a", "x", "3")  # a used again
    memory.remember("c", "x", "4")
    assert memory.last("b", "x") is None and memory.last("a", "x") == "3"


def test_a_quiet_conversation_is_forgotten(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(continuity.time, "monotonic", lambda: now[0])
    memory = continuity.DelegateContexts(idle_seconds=60)
    memory.remember("a", "x", "1")
    now[0] += 59
    assert memory.last("a", "x") == "1"
    now[0] += 61
    assert memory.last("a", "x") is None and len(memory) == 0
    memory.remember("b", "x", "1")
    now[0] += 61
    memory.remember("c", "x", "1")  # a write drops the idle ones too
    assert len(memory) == 1


def test_rekey_keeps_the_entries_under_the_service_assigned_id():
    memory = continuity.DelegateContexts()
    memory.remember("framework-id", "x", "ctx")
    memory.rekey("framework-id", "service-id")
    assert memory.last("service-id", "x") == "ctx" and memory.last("framework-id", "x") is None


def test_seen_keys_from_the_second_sighting_and_bounded():
    seen = continuity.SeenKeys(max_keys=2)
    assert not seen.seen_before("d1") and seen.seen_before("d1")
    seen.seen_before("d2")
    seen.seen_before("d3")  # d1 is the oldest: dropped
    assert not seen.seen_before("d1")


def test_seen_keys_has_looks_without_recording_and_expires():
    seen = continuity.SeenKeys(max_keys=2, idle_seconds=3600)
    assert not seen.has("ctx") and not seen.has("ctx")  # a look records nothing
    seen.seen_before("ctx")
    assert seen.has("ctx")
    seen.idle_seconds = -1.0  # every entry is now idle
    assert not seen.has("ctx")


def test_new_conversation_is_scoped():
    assert not continuity.new_conversation_declared()
    with continuity.new_conversation():
        assert continuity.new_conversation_declared()
    assert not continuity.new_conversation_declared()


def test_no_meter_provider_is_a_no_op_and_labels_stay_bounded():
    metrics.reset()
    metrics.count(metrics.DELEGATE_RESTARTS, agent="x", framework="a2a")  # nothing configured: no-op
    reader = InMemoryMetricReader()
    metrics.configure(MeterProvider(metric_readers=[reader]))
    try:
        for i in range(150):
            metrics.count(metrics.DELEGATE_RESTARTS, agent=f"agent-{i}" + "x" * 100, framework="a2a")
        metrics.count(metrics.DELEGATE_RESTARTS, agent=None, framework="a2a")
        metrics.count(metrics.DELEGATE_RESTARTS, agent=12345, framework="a2a")  # not a str: empty label
        points = metric_points(reader)
        agents = {p.attributes["agent"] for p in points}
        assert len(agents) == 102 and "other" in agents and "" in agents  # 100 names, other, empty
        assert max(len(a) for a in agents) == 64
        assert sum(p.value for p in points) == 152
        assert all(set(p.attributes) == {"service", "agent", "framework"} for p in points)
    finally:
        metrics.reset()
