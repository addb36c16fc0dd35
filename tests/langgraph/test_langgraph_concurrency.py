"""Many runs at once, each on its own thread: 150 concurrent ``ainvoke`` in one event loop and 30
runs in OS threads, two turns each. Ground truth: the model's history count per thread, and the
city each thread's tool was called with (the thread id itself)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from lg_support import CONV, EXEC, agent_spans, in_run, make_agent, seen_counts


def _check(exporter, threads):
    spans = exporter.get_finished_spans()
    runs = agent_spans(spans)
    assert len(runs) == 2 * len(threads)
    assert sorted(r.attributes[CONV] for r in runs) == sorted(threads * 2)
    assert len({r.attributes[EXEC] for r in runs}) == len(runs)
    covered = 0
    for run in runs:
        inside = in_run(spans, run)
        covered += len(inside)
        assert len(inside) == 4
        assert {(s.attributes[CONV], s.attributes[EXEC]) for s in inside} == {
            (run.attributes[CONV], run.attributes[EXEC])
        }
        (tool,) = [s for s in inside if s.name.startswith("execute_tool")]
        assert tool.attributes["offline.city"] == run.attributes[CONV]  # no bleed between threads
    assert covered == len(spans)


async def test_150_concurrent_ainvoke_two_turns_each(instrumentor, exporter):
    agent = make_agent()
    threads = [f"conv-{i}" for i in range(150)]

    async def turn(thread):
        return await agent.ainvoke({"messages": [("user", thread)]}, {"configurable": {"thread_id": thread}})

    firsts = await asyncio.gather(*(turn(t) for t in threads))
    seconds = await asyncio.gather(*(turn(t) for t in threads))
    assert all(seen_counts(r) == [3] for r in firsts) and all(seen_counts(r) == [3, 7] for r in seconds)
    _check(exporter, threads)


def test_30_threaded_runs_two_turns_each(instrumentor, exporter):
    agent = make_agent()
    threads = [f"th-{i}" for i in range(30)]

    def two_turns(thread):
        cfg = {"configurable": {"thread_id": thread}}
        agent.invoke({"messages": [("user", thread)]}, cfg)
        return agent.invoke({"messages": [("user", thread)]}, cfg)

    with ThreadPoolExecutor(30) as pool:
        results = list(pool.map(two_turns, threads))
    assert all(seen_counts(r) == [3, 7] for r in results)
    _check(exporter, threads)
