"""The thread id the adapter reads without building the effective config. Ground truth: LangGraph's
own ``ensure_config`` on every combination of config shapes, and the config LangGraph hands the
nodes of real nested runs (``get_config()``)."""

from __future__ import annotations

import contextvars
import itertools
import uuid
from collections import UserDict

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph._internal._config import ensure_config
from lg_support import CONV, agent_spans, counter_graph

import otel_agent_identity
from otel_agent_identity.adapters.langgraph import effective_thread_id

_UID = uuid.UUID("12345678-1234-5678-1234-567812345678")
_CONFIGS = [
    None,
    {},
    {"configurable": {}},
    {"configurable": {"thread_id": "own"}},
    {"configurable": {"thread_id": None}},
    {"configurable": {"thread_id": 7}},
    {"configurable": {"thread_id": _UID}},
    {"configurable": {"user": "u"}},
    {"configurable": {"checkpoint_ns": "ns"}},
    {"configurable": {"checkpoint_id": ""}},
    {"configurable": {"checkpoint_map": {}}},
    {"configurable": {"checkpoint_map": {"": "c"}}},
    {"configurable": {"checkpoint_ns": None, "user": "u"}},
    {"thread_id": "top"},
    {"thread_id": None},
    {"thread_id": []},
    {"thread_id": "top", "configurable": {"thread_id": "own"}},
    {"run_id": _UID, "tags": ["t"]},
    {"configurable": None},
    UserDict({"configurable": {"thread_id": "mapping"}}),
]
_INHERITED = [
    None,
    {},
    {"tags": ["p"]},
    {"configurable": {}},
    {"configurable": {"thread_id": "parent"}},
    {"configurable": {"thread_id": "parent", "checkpoint_ns": "step:1", "user": "p"}},
    {"configurable": {"user": "p"}},
]


def test_thread_id_matches_ensure_config_on_every_shape(instrumentor):
    checked = 0
    for inherited in _INHERITED:
        ctx = contextvars.copy_context()
        ctx.run(var_child_runnable_config.set, inherited)
        for bound, given in itertools.product(_CONFIGS, repeat=2):
            truth = ctx.run(ensure_config, bound, given)["configurable"].get("thread_id")
            assert ctx.run(effective_thread_id, bound, given) == truth, (inherited, bound, given)
            checked += 1
    assert checked == len(_INHERITED) * len(_CONFIGS) ** 2


def _recording(name, log):
    def step(state, config: RunnableConfig):
        log.append((name, config["configurable"].get("thread_id")))
        return {"x": state["x"] + 1}

    return counter_graph(name, step)


def test_real_runs_report_the_thread_their_nodes_run_in(instrumentor, exporter):
    log = []
    refine, top_key, bound = _recording("refine", log), _recording("top_key", log), _recording("bound", log)
    bound = bound.with_config(thread_id="bound-thread")
    parent = counter_graph(
        "parent",
        lambda s: (
            refine.invoke(s, {"configurable": {"user": "u"}}),  # no coordinate: keeps the parent's thread
            top_key.invoke(s, {"thread_id": "top-thread"}),  # a top-level key LangGraph moves into configurable
            bound.invoke(s),  # bound with with_config(thread_id=...)
            {"x": s["x"] + 1},
        )[-1],
    )
    assert parent.invoke({"x": 0}, {"thread_id": "conv-parent"}) == {"x": 1}
    # ground truth: the thread LangGraph ran each child's node in
    truth = dict(log)
    assert truth == {"refine": "conv-parent", "top_key": "top-thread", "bound": "bound-thread"}
    runs = {s.name.split()[-1]: s for s in agent_spans(exporter.get_finished_spans())}
    assert {name: runs[name].attributes.get(CONV) for name in truth} == truth
    assert runs["parent"].attributes[CONV] == "conv-parent"


def test_an_override_gets_the_whole_effective_config(instrumentor, exporter):
    from langgraph.graph.state import CompiledStateGraph

    seen = []
    otel_agent_identity.register_extractor(CompiledStateGraph, lambda graph, config, call: seen.append(config) or "o")
    try:
        graph = counter_graph("g").with_config(configurable={"user": "ann"}, tags=["bound"])
        graph.invoke({"x": 0}, {"configurable": {"thread_id": "t"}, "tags": ["call"]})
    finally:
        otel_agent_identity.registry.unregister(CompiledStateGraph)
    assert (
        seen and seen[0]["configurable"] == {"user": "ann", "thread_id": "t"} and seen[0]["tags"] == ["bound", "call"]
    )
    (span,) = exporter.get_finished_spans()
    assert span.attributes[CONV] == "o"
