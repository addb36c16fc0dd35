"""Nested graphs: a subgraph node, a graph invoked in a node without a config, a child with its own
thread_id, siblings in parallel, and an interrupt leaving a subgraph. Ground truth: the thread id
LangGraph itself gives the child's node (``get_config()``), and the checkpoints it stored."""

from __future__ import annotations

import itertools

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from lg_support import CONV, EXEC, PARENT, S, agent_spans, counter_graph, in_run
from opentelemetry import trace
from opentelemetry.trace import StatusCode

_tracer = trace.get_tracer("lg-tests")


def _recording_child(name, log, checkpointer=None):
    """A child graph whose node records the thread LangGraph runs it in, inside a span."""

    def step(state, config: RunnableConfig):
        with _tracer.start_as_current_span(f"work {name}"):
            log.append((name, config["configurable"].get("thread_id")))
        return {"x": state["x"] + 1}

    return counter_graph(name, step, checkpointer)


def _parent(nodes, checkpointer=None, parallel=False):
    g = StateGraph(S)
    names = list(nodes)
    for name, node in nodes.items():
        g.add_node(name, node)
    if parallel:
        for name in names:
            g.add_edge(START, name)
            g.add_edge(name, END)
    else:
        g.add_edge(START, names[0])
        for a, b in itertools.pairwise(names):
            g.add_edge(a, b)
        g.add_edge(names[-1], END)
    return g.compile(name="parent", checkpointer=checkpointer or InMemorySaver())


def _by_name(spans):
    return {s.name: s for s in agent_spans(spans)}


def test_three_nested_shapes_record_the_parent_and_their_real_thread(instrumentor, exporter):
    log = []
    sub = _recording_child("sub", log)
    inline = _recording_child("inline", log)
    own_saver = InMemorySaver()
    own = _recording_child("own", log, own_saver)
    parent = _parent(
        {
            "subgraph_node": sub,  # a compiled graph added as a node
            "call_inline": lambda s: inline.invoke(s),  # invoked in a node, no config
            "call_own": lambda s: own.invoke(s, {"configurable": {"thread_id": "child-thread"}}),
        }
    )
    assert parent.invoke({"x": 0}, {"configurable": {"thread_id": "conv-parent"}}) == {"x": 3}
    # ground truth: LangGraph ran the first two in the parent's thread, the third in its own
    assert log == [("sub", "conv-parent"), ("inline", "conv-parent"), ("own", "child-thread")]
    assert own_saver.get_tuple({"configurable": {"thread_id": "child-thread"}}).checkpoint["channel_values"]["x"] == 3

    spans = exporter.get_finished_spans()
    runs = _by_name(spans)
    assert sorted(runs) == ["invoke_agent inline", "invoke_agent own", "invoke_agent parent", "invoke_agent sub"]
    top = runs["invoke_agent parent"]
    assert top.attributes[CONV] == "conv-parent" and PARENT not in top.attributes and top.parent is None
    for name, thread in [("sub", "conv-parent"), ("inline", "conv-parent"), ("own", "child-thread")]:
        child = runs[f"invoke_agent {name}"]
        assert child.attributes[CONV] == thread, name
        assert child.attributes[PARENT] == top.attributes[EXEC], name
        assert child.attributes[EXEC] != top.attributes[EXEC]
        assert child in in_run(spans, top)  # the trace nests it under the parent's span
        work = next(s for s in spans if s.name == f"work {name}")
        assert (work.attributes[CONV], work.attributes[EXEC]) == (thread, child.attributes[EXEC])
        assert work in in_run(spans, child)


def test_parallel_children_do_not_share_ids(instrumentor, exporter):
    log = []
    children = {f"c{i}": _recording_child(f"c{i}", log) for i in range(4)}

    def caller(child):
        def node(state):
            child.invoke(state)
            return {}  # siblings in one step may not all write x

        return node

    parent = _parent({f"n{i}": caller(c) for i, c in enumerate(children.values())}, parallel=True)
    parent.invoke({"x": 0}, {"configurable": {"thread_id": "conv-p"}})
    assert sorted(log) == [(f"c{i}", "conv-p") for i in range(4)]
    spans = exporter.get_finished_spans()
    runs = _by_name(spans)
    top = runs["invoke_agent parent"]
    execs = set()
    for i in range(4):
        child = runs[f"invoke_agent c{i}"]
        work = next(s for s in spans if s.name == f"work c{i}")
        assert work.attributes[EXEC] == child.attributes[EXEC] and child.attributes[PARENT] == top.attributes[EXEC]
        execs.add(child.attributes[EXEC])
    assert len(execs) == 4


def test_interrupt_leaving_a_subgraph_is_not_a_failure_and_resume_continues(instrumentor, exporter):
    answers = []

    def ask(state):
        answers.append(interrupt("approve?"))
        return {"x": state["x"] + 1}

    sub = counter_graph("approval", ask)
    parent = _parent({"approval_node": sub})
    cfg = {"configurable": {"thread_id": "conv-hitl"}}
    first = parent.invoke({"x": 0}, cfg)
    assert "__interrupt__" in first and answers == []
    assert parent.invoke(Command(resume="yes"), cfg) == {"x": 1} and answers == ["yes"]
    runs = agent_spans(exporter.get_finished_spans())
    assert [r.name for r in runs] == ["invoke_agent approval", "invoke_agent parent"] * 2
    assert all(r.status.status_code == StatusCode.UNSET for r in runs)  # GraphInterrupt is control flow
    assert {r.attributes[CONV] for r in runs} == {"conv-hitl"}
    assert (
        runs[0].attributes[PARENT] == runs[1].attributes[EXEC]
        and runs[2].attributes[PARENT] == runs[3].attributes[EXEC]
    )
    assert len({r.attributes[EXEC] for r in runs}) == 4


async def test_async_nested_graph_records_the_parent(instrumentor, exporter):
    log = []
    inline = _recording_child("inline", log)

    async def call(state):
        return await inline.ainvoke(state)

    parent = _parent({"call": call})
    assert await parent.ainvoke({"x": 0}, {"configurable": {"thread_id": "conv-a"}}) == {"x": 1}
    assert log == [("inline", "conv-a")]
    runs = _by_name(exporter.get_finished_spans())
    child, top = runs["invoke_agent inline"], runs["invoke_agent parent"]
    assert child.attributes[CONV] == "conv-a" and child.attributes[PARENT] == top.attributes[EXEC]


def _recursive(call):
    """A graph whose node runs the same graph object again (via ``call``) until x reaches 2."""
    depths = []

    def step(state):
        depths.append(state["x"])
        if state["x"] < 2:
            return {"x": call(graph, state["x"] + 1)}
        return {"x": state["x"]}

    graph = counter_graph("self", step)
    return graph, depths


def _check_chain(exporter, depths):
    assert depths == [0, 1, 2]  # ground truth: three runs of the graph, one inside the other
    runs = agent_spans(exporter.get_finished_spans())
    assert len(runs) == 3 and len({r.attributes[EXEC] for r in runs}) == 3
    inner, middle, outer = runs  # ended innermost first
    assert PARENT not in outer.attributes
    assert middle.attributes[PARENT] == outer.attributes[EXEC] and inner.attributes[PARENT] == middle.attributes[EXEC]
    assert {r.attributes[CONV] for r in runs} == {"conv-self"}


def test_a_node_streaming_its_own_graph_is_a_run_of_its_own(instrumentor, exporter):
    # invoke() marks the one stream it opens as its own; the node's stream() of the same graph is not it
    graph, depths = _recursive(lambda g, x: list(g.stream({"x": x}, stream_mode="values"))[-1]["x"])
    assert graph.invoke({"x": 0}, {"configurable": {"thread_id": "conv-self"}}) == {"x": 2}
    _check_chain(exporter, depths)


async def test_an_async_node_streaming_its_own_graph_is_a_run_of_its_own(instrumentor, exporter):
    async def step(state):
        depths.append(state["x"])
        if state["x"] < 2:
            return {"x": [c async for c in graph.astream({"x": state["x"] + 1}, stream_mode="values")][-1]["x"]}
        return {"x": state["x"]}

    depths = []
    graph = counter_graph("self", step)
    assert await graph.ainvoke({"x": 0}, {"configurable": {"thread_id": "conv-self"}}) == {"x": 2}
    _check_chain(exporter, depths)


def test_a_node_invoking_its_own_graph_is_a_run_of_its_own(instrumentor, exporter):
    graph, depths = _recursive(lambda g, x: g.invoke({"x": x})["x"])
    assert graph.invoke({"x": 0}, {"configurable": {"thread_id": "conv-self"}}) == {"x": 2}
    _check_chain(exporter, depths)
