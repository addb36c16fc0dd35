"""``agent_identity.conversation.resumed`` of LlamaIndex agent runs against what the offline model
really saw (it reports the conversation messages it was given), both ways: a memory given on every
run, ``chat_history``, a fresh run, an ``AgentWorkflow``; and the headline forgetting, a ``Context``
reused or restored with ``from_dict`` that silently starts from nothing with pydantic 2.14 (and
continues with 2.13), each pydantic pinned in a directory of its own on ``PYTHONPATH``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from context_turns import turns
from li_support import RESUMED, agent_spans, team, weather_agent
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from offline_llama_index import seen

ROOT = Path(__file__).resolve().parents[2]
#: pydantic version -> what the reused/restored context gives the model on turns 1, 2, 3
PYDANTICS = {"2.13.5": [1, 3, 5], "2.14.4": [1, 1, 1]}


def _resumed(exporter) -> list:
    runs = sorted(agent_spans(exporter.get_finished_spans()), key=lambda s: s.start_time)
    return [s.attributes.get(RESUMED) for s in runs]


def test_a_memory_given_on_every_run_resumed_a_new_one_did_not(instrumentor, exporter):
    agent = weather_agent()

    async def go():
        memory = Memory.from_defaults(session_id="conv-1")
        out = [await agent.run(user_msg="hello", memory=memory) for _ in range(3)]
        out.append(await agent.run(user_msg="hello", memory=Memory.from_defaults(session_id="conv-2")))
        out.append(await agent.run(user_msg="hello"))  # no memory, no context: nothing to resume
        return [seen(o) for o in out]

    saw = asyncio.run(go())
    assert saw == [1, 3, 5, 1, 1]
    assert _resumed(exporter) == [n > 1 for n in saw] == [False, True, True, False, False]


def test_an_in_process_chat_memory_given_on_every_run_resumed_a_new_one_did_not(instrumentor, exporter):
    """A ``ChatMemoryBuffer`` on a ``SimpleChatStore`` in a new context: read at the run's start,
    without awaiting (a system message alone is no conversation)."""
    agent = weather_agent()

    async def go():
        memory = ChatMemoryBuffer.from_defaults(chat_store_key="conv-b")
        out = [await agent.run(user_msg="hello", memory=memory) for _ in range(3)]
        system_only = ChatMemoryBuffer.from_defaults(chat_store_key="conv-s")
        system_only.put(ChatMessage(role="system", content="be brief"))
        out.append(await agent.run(user_msg="hello", memory=system_only))
        out.append(await agent.run(user_msg="hello", memory=ChatMemoryBuffer.from_defaults(chat_store_key="conv-c")))
        return [seen(o) for o in out]

    saw = asyncio.run(go())
    assert saw == [1, 3, 5, 1, 1]
    assert _resumed(exporter) == [n > 1 for n in saw] == [False, True, True, False, False]


def test_chat_history_brings_earlier_messages(instrumentor, exporter):
    agent = weather_agent()
    history = [ChatMessage(role="user", content="hi"), ChatMessage(role="assistant", content="hello")]

    async def go():
        with_history = await agent.run(user_msg="again", chat_history=history)
        only_the_new_one = await agent.run(chat_history=[ChatMessage(role="user", content="hi")])
        return [seen(with_history), seen(only_the_new_one)]

    saw = asyncio.run(go())
    assert saw == [3, 1]
    assert _resumed(exporter) == [True, False]


def test_an_agent_workflow_with_its_memory_resumed(instrumentor, exporter):
    workflow = team()

    async def go():
        memory = Memory.from_defaults(session_id="team-1")
        return [seen(await workflow.run(user_msg="hello", memory=memory)) for _ in range(2)]

    saw = asyncio.run(go())
    assert saw == [1, 3]
    assert _resumed(exporter) == [False, True]


def test_this_venvs_pydantic_resumed_matches_what_the_model_saw(instrumentor, exporter):
    out = turns(exporter)
    assert out["resumed"] == [n > 1 for n in out["seen"]]
    if out["pydantic"] in PYDANTICS:
        assert out["seen"] == PYDANTICS[out["pydantic"]]


def _pinned(version: str) -> Path:
    """A directory holding pydantic ``version`` (and its own pydantic-core), installed once."""
    target = ROOT / ".cache" / "llama-index-pydantic" / version
    if not (target / ".installed").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(target), f"pydantic=={version}"],
            check=True,
            timeout=300,
        )
        (target / ".installed").touch()
    return target


@pytest.mark.parametrize("version", sorted(PYDANTICS))
def test_a_reused_or_restored_context_forgets_with_pydantic_2_14_and_is_flagged(version):
    """The same application code: with pydantic 2.13 the second and third turns continue
    (resumed=true), with 2.14 LlamaIndex drops the memory with a warning and the model sees only
    the new message each turn (resumed=false: the forgetting the collector then flags)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(_pinned(version)), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("context_turns.py"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["pydantic"] == version
    assert out["seen"] == PYDANTICS[version]
    assert out["resumed"] == [n > 1 for n in PYDANTICS[version]]
    assert out["warned"] is (version == "2.14.4")  # LlamaIndex's only sign: a warning
    # the id lives in the memory: carried (read as the run sets up its context) or lost with it
    assert out["conversation"] == ["conv-ctx", *(["conv-ctx"] * 2 if version == "2.13.5" else [None, None])]
