"""Issue 22 on real LangGraph runs: the run's ids travel with the OpenTelemetry context (thread pools
the traced way, explicit parent contexts) and nowhere else; the application's own conversation id
always wins; ``suppress_instrumentation`` turns us off."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.tools import tool
from langgraph.pregel import Pregel
from lg_support import CONV, EXEC, agent_spans, counter_graph
from opentelemetry import context, trace
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.sdk.trace import SpanLimits

import otel_agent_identity
from app_shapes import LIMITS, NAME, SHAPES, check, run_shape
from otel_agent_identity import AgentIdentityInstrumentor

tracer = trace.get_tracer("lg-context-tests")


def _work(tag: str) -> None:
    tracer.start_span(f"worker {tag}").end()


def _by_name(spans) -> dict:
    return {s.name: s for s in spans}


def _ids(span) -> tuple:
    return span.attributes.get(CONV), span.attributes.get(EXEC)


def test_worker_span_inside_a_run_has_its_ids_and_the_reused_worker_outside_none(instrumentor, exporter, submit):
    with ThreadPoolExecutor(max_workers=1) as pool:
        graph = counter_graph("pooled", node=lambda s: submit(pool, _work, "in run").result(10) or {"x": s["x"] + 1})
        graph.invoke({"x": 0}, {"configurable": {"thread_id": "conv-pool"}})
        submit(pool, _work, "after").result(10)  # the same worker thread, no run
    spans = _by_name(exporter.get_finished_spans())
    run = spans["invoke_agent pooled"]
    assert _ids(spans["worker in run"]) == ("conv-pool", run.attributes[EXEC])
    assert spans["worker in run"].parent.span_id == run.context.span_id
    assert _ids(spans["worker after"]) == (None, None)


def test_public_api_goes_with_the_context_to_a_worker(instrumentor, exporter, submit):
    """``execution()`` before a run handed to a worker, ``conversation_id()``/``current_scope()`` in one."""
    seen = {}

    def node(s):
        seen["conversation"] = submit(pool, otel_agent_identity.conversation_id).result(10)
        seen["scope"] = submit(pool, otel_agent_identity.current_scope).result(10)
        return {"x": s["x"] + 1}

    with (
        ThreadPoolExecutor(max_workers=1) as pool,
        ThreadPoolExecutor(max_workers=1) as runs,
        otel_agent_identity.execution("job-42"),
    ):
        graph = counter_graph("supplied", node=node)
        submit(runs, graph.invoke, {"x": 0}, {"configurable": {"thread_id": "conv-api"}}).result(10)
    (run,) = agent_spans(exporter.get_finished_spans())
    assert run.attributes[EXEC] == "job-42" and seen["conversation"] == "conv-api"
    assert seen["scope"].execution_id == "job-42"


def test_two_concurrent_runs_on_a_two_thread_pool_stamp_only_their_own_ids(instrumentor, exporter, submit):
    both_in = threading.Barrier(2, timeout=10)  # both runs are in their node at once

    def node(s):
        both_in.wait()
        for f in [submit(pool, _work, f"{s['x']}-{i}") for i in range(6)]:
            f.result(10)
        return {"x": s["x"] + 1}

    with ThreadPoolExecutor(max_workers=2) as pool, ThreadPoolExecutor(max_workers=2) as callers:
        graph = counter_graph("twin", node=node)
        runs = [callers.submit(graph.invoke, {"x": n}, {"configurable": {"thread_id": f"conv-{n}"}}) for n in (0, 100)]
        for r in runs:
            r.result(30)
    spans = exporter.get_finished_spans()
    agents = {a.context.span_id: a for a in agent_spans(spans)}
    assert len(agents) == 2 and len({a.attributes[EXEC] for a in agents.values()}) == 2
    workers = [s for s in spans if s.name.startswith("worker")]
    assert len(workers) == 12
    for w in workers:
        run = agents[w.parent.span_id]
        assert _ids(w) == _ids(run), w.name
        assert run.attributes[CONV] == ("conv-0" if w.name.startswith("worker 0-") else "conv-100")


def test_explicit_parent_context_carries_the_ids_it_was_captured_with(instrumentor, exporter):
    captured = {"before": context.get_current()}

    def in_a(s):
        captured["a"] = context.get_current()
        return {"x": s["x"] + 1}

    def in_b(s):
        tracer.start_span("from a", context=captured["a"]).end()
        tracer.start_span("from before", context=captured["before"]).end()
        tracer.start_span("current b").end()
        return {"x": s["x"] + 1}

    counter_graph("run_a", node=in_a).invoke({"x": 0}, {"configurable": {"thread_id": "conv-a"}})
    counter_graph("run_b", node=in_b).invoke({"x": 0}, {"configurable": {"thread_id": "conv-b"}})
    spans = _by_name(exporter.get_finished_spans())
    a, b = spans["invoke_agent run_a"], spans["invoke_agent run_b"]
    assert _ids(spans["from a"]) == ("conv-a", a.attributes[EXEC])
    assert spans["from a"].parent.span_id == a.context.span_id
    assert _ids(spans["from before"]) == (None, None)
    assert _ids(spans["current b"]) == ("conv-b", b.attributes[EXEC])


def test_suppressed_run_has_no_span_or_attribute_of_ours(instrumentor, exporter):
    graph = counter_graph("quiet", node=lambda s: _work("quiet") or {"x": s["x"] + 1})
    with suppress_instrumentation():
        assert graph.invoke({"x": 0}, {"configurable": {"thread_id": "conv-q"}}) == {"x": 1}
    (span,) = exporter.get_finished_spans()
    assert span.name == "worker quiet" and not set(span.attributes) & {CONV, EXEC}
    graph.invoke({"x": 0}, {"configurable": {"thread_id": "conv-q"}})  # not suppressed: ours again
    assert len(agent_spans(exporter.get_finished_spans())) == 1


def test_instrument_while_suppressed_changes_nothing(tracer_provider, exporter):
    inst = AgentIdentityInstrumentor()
    with suppress_instrumentation():
        inst.instrument(tracer_provider=tracer_provider)
    try:
        assert not inst.is_instrumented_by_opentelemetry and not hasattr(Pregel.invoke, "__wrapped__")
        counter_graph("plain").invoke({"x": 0}, {"configurable": {"thread_id": "t"}})
        assert not exporter.get_finished_spans()
        inst.instrument(tracer_provider=tracer_provider)  # afterwards, not suppressed: it instruments
        assert hasattr(Pregel.invoke, "__wrapped__")
    finally:
        inst.uninstrument()


@tool
def shaped(city: str) -> str:
    """Run the application code shape named ``city``."""
    run_shape(city)
    return "done"


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_applications_own_conversation_id_in_a_tool_wins(limited, exporter, shape, limit):
    import warnings

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent
    from offline_langchain import OfflineToolModel

    limited(**({} if limit is None else {"max_span_attributes": limit}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(OfflineToolModel(), [shaped], name="shaper", checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", shape)]}, {"configurable": {"thread_id": "conv-run"}})
    spans = exporter.get_finished_spans()
    (run,) = agent_spans(spans)
    (app,) = [s for s in spans if s.name == NAME]
    assert app.parent.span_id == run.context.span_id  # inside the run
    check(app, shape, limit, run.attributes[EXEC])


#: the SDK's default count limit, or none
MODES = {"default": {}, "no count limit": {"max_span_attributes": SpanLimits.UNSET}}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("own", ["mine", None], ids=["app sets its id", "app sets nothing"])
def test_the_applications_own_conversation_id_on_the_run_span_wins(limited, exporter, own, mode):
    """The run's ``invoke_agent`` span is ours (LangGraph has none): an id the application sets on it
    from inside a node stays; without one, the span reports the run's ``thread_id``."""
    limited(**MODES[mode])
    _owned_run(own)
    spans = _by_name(exporter.get_finished_spans())
    run = spans["invoke_agent owned"]
    assert run.attributes[CONV] == (own or "conv-owned")
    assert _ids(spans["node work"]) == ("conv-owned", run.attributes[EXEC])  # the run's id inside it


@pytest.mark.parametrize("order", ["id then crowd", "crowd then id", "crowd only"])
def test_the_applications_id_evicted_from_the_run_span_is_not_replaced_by_ours(limited, exporter, order):
    """Under a count limit of 4, the application's own id on the run span, then 10 attributes of its
    own: the SDK alone would evict the id, so the span has none (never the run's id in its place);
    set after the crowd, it stays; with none of the application's, the run's id is there."""
    limited(max_span_attributes=4)
    crowd = [(f"app.a{i}", i) for i in range(10)]
    writes = {"id then crowd": [(CONV, "mine"), *crowd], "crowd then id": [*crowd, (CONV, "mine")]}
    _owned_run(None, writes.get(order, crowd))
    run = _by_name(exporter.get_finished_spans())["invoke_agent owned"]
    assert run.attributes.get(CONV) == {"id then crowd": None, "crowd then id": "mine"}.get(order, "conv-owned")
    assert run.attributes[EXEC]  # ours, written again as the run ends (the run's own span)


def _owned_run(own: str | None, writes: list | None = None) -> None:
    def node(s):
        if own is not None:
            trace.get_current_span().set_attribute(CONV, own)
        for key, value in writes or ():
            trace.get_current_span().set_attribute(key, value)
        tracer.start_span("node work").end()
        return {"x": s["x"] + 1}

    counter_graph("owned", node=node).invoke({"x": 0}, {"configurable": {"thread_id": "conv-owned"}})
