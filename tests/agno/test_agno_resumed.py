"""``agent_identity.conversation.resumed`` of Agno runs, read from the session Agno itself loaded
for the run, against what the offline model really saw (``history=<n>``): both ways, including
the shapes a naive rule gets wrong (history kept in the db but never given to the model; two agents
sharing one SQLite db)."""

from __future__ import annotations

import asyncio

from agno.db.sqlite import SqliteDb
from agno_support import agent_spans, make_agent

RESUMED = "agent_identity.conversation.resumed"


def _resumed(exporter, name: str = "helper") -> list:
    return [s.attributes.get(RESUMED) for s in agent_spans(exporter.get_finished_spans(), name)]


def test_a_session_with_history_in_context_resumed(instrumentor, exporter):
    agent = make_agent()
    for text in ("hello", "again", "more"):
        agent.run(text, session_id="conv-a")
    agent.run("hello", session_id="conv-b")
    assert [c.history for c in agent.model.calls] == [0, 1, 2, 0]
    assert _resumed(exporter) == [False, True, True, False]


def test_a_new_session_per_request_never_resumed(instrumentor, exporter):
    agent = make_agent()
    for n in range(3):
        agent.run("hello", session_id=f"fresh-{n}")
    assert [c.history for c in agent.model.calls] == [0, 0, 0]
    assert _resumed(exporter) == [False, False, False]


def test_history_in_the_db_that_never_reaches_the_model_is_not_resumed(instrumentor, exporter):
    agent = make_agent(add_history_to_context=False)
    for text in ("hello", "again", "more"):
        agent.run(text, session_id="conv-a")
    assert [c.history for c in agent.model.calls] == [0, 0, 0]  # the db has the runs, the model never sees them
    assert _resumed(exporter) == [False, False, False]


def test_the_run_argument_decides_over_the_agent_setting(instrumentor, exporter):
    agent = make_agent(add_history_to_context=False)
    agent.run("hello", session_id="conv-a")
    agent.run("again", session_id="conv-a", add_history_to_context=True)
    assert [c.history for c in agent.model.calls] == [0, 1]
    assert _resumed(exporter) == [False, True]


def test_no_db_never_resumed(instrumentor, exporter):
    agent = make_agent(db=None)
    agent.run("hello", session_id="conv-a")
    agent.run("again", session_id="conv-a")
    assert [c.history for c in agent.model.calls] == [0, 0]
    assert _resumed(exporter) == [False, False]


def test_two_replicas_sharing_one_sqlite_db_resume_each_others_turns(instrumentor, exporter, tmp_path):
    db_file = str(tmp_path / "shared.db")
    replicas = [make_agent(db=SqliteDb(db_file=db_file)) for _ in range(2)]

    async def go():
        for turn in range(4):
            await replicas[turn % 2].arun(f"turn {turn}", session_id="conv-r")

    asyncio.run(go())
    assert [c.history for r in replicas for c in r.model.calls] == [0, 2, 1, 3]  # replica 0: turns 0, 2
    assert _resumed(exporter) == [False, True, True, True]


def test_streams_record_it_too(instrumentor, exporter):
    agent = make_agent()
    for text in ("hello", "again"):
        list(agent.run(text, session_id="conv-s", stream=True))
    assert _resumed(exporter) == [False, True]
