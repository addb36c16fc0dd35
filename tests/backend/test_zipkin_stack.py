"""Conversations in a real Zipkin, fed by the real collector from real agents: the backend's API,
the report command and the UI links (loaded in headless Chromium) each show exactly the traces
the orchestrator recorded for that conversation, and the flagged hops exactly the forgetful ones.

``AGENT_IDENTITY_SCREENSHOTS=DIR`` also keeps the two screenshots there (``make screenshots``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from backend_support import CORRECT, FORGETFUL
pytestmark = [pytest.mark.e2e, pytest.mark.collector]

TRACE_LINK = re.compile(r'href="/zipkin/traces/([0-9a-f]{32})"')


def test_each_conversation_has_its_own_id_and_zipkin_lists_it(stack):
    assert sorted(stack.conversations.values()) == sorted([CORRECT, FORGETFUL])
    listed = stack.zipkin.api("autocompleteValues", key="gen_ai.conversation.id")
    assert set(stack.conversations) <= set(listed)


@pytest.mark.parametrize("specialist", [CORRECT, FORGETFUL])
def test_zipkin_search_returns_exactly_the_conversations_traces(stack, specialist):
    conversation = stack.conversation_of(specialist)
    traces = stack.zipkin.api("traces", annotationQuery=f"gen_ai.conversation.id={conversation}", limit="1000")
    assert {t[0]["traceId"] for t in traces} == stack.traces_of(specialist)
    assert {s["localEndpoint"]["serviceName"] for t in traces for s in t} == {"orchestrator", specialist}


def _report(stack, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "otel_agent_identity.report", "--zipkin", stack.zipkin.url,
                           "--since", "1h", *flags], capture_output=True, text=True, timeout=60)


def test_report_json_matches_the_ground_truth(stack):
    out = _report(stack, "--json")
    assert out.returncode == 1, out.stderr  # some conversation broke
    convs = {c["id"]: c for c in json.loads(out.stdout)["conversations"]}
    assert set(convs) == set(stack.conversations)
    for conversation, specialist in stack.conversations.items():
        c, records = convs[conversation], [r for r in stack.records if r["conversation"] == specialist]
        assert set(c["trace_ids"]) == stack.traces_of(specialist) and c["turns"] == 3
        assert set(c["services"]) == {"orchestrator", specialist}
        assert len(c["hops"]) == len(records)  # one judged hop per send, retries included
        assert {h["asked"] for h in c["hops"]} == {records[0]["context_id"]}
        flagged = [h for h in c["hops"] if h["flagged"]]
        duplicates = [h for h in c["hops"] if h["duplicate"]]
        if specialist == FORGETFUL:
            assert {h["trace_id"] for h in flagged} == stack.traces_of(FORGETFUL) and len(flagged) == len(records)
            assert all(h["used"] != h["asked"] for h in flagged) and duplicates == []
        else:
            assert flagged == [] and all(h["used"] == h["asked"] for h in c["hops"])
            retried = {r["trace_id"] for r in records if r["attempt"] > 1}
            assert [h["trace_id"] for h in duplicates] == sorted(retried) and len(retried) == 1
            assert c["flagged"] == 0 and c["duplicates"] == 1


def test_report_table_names_every_conversation_and_each_flagged_hop(stack):
    out = _report(stack)
    assert out.returncode == 1, out.stderr
    assert "2 conversation(s)" in out.stdout
    for conversation in stack.conversations:
        assert conversation in out.stdout
    flagged = [line for line in out.stdout.splitlines() if line.lstrip().startswith("flagged")]
    assert {re.search(r"trace (\w+)", line).group(1) for line in flagged} == stack.traces_of(FORGETFUL)
    assert all(f"orchestrator -> {FORGETFUL}" in line for line in flagged)


def test_sessions_overlay_copies_the_conversation_id_into_session_id(stack):
    conversation = stack.conversation_of(CORRECT)
    traces = stack.zipkin.api("traces", annotationQuery=f"gen_ai.conversation.id={conversation}", limit="1000")
    tagged = [s["tags"] for t in traces for s in t if "gen_ai.conversation.id" in s.get("tags", {})]
    assert tagged and all(tags.get("session.id") == tags["gen_ai.conversation.id"] for tags in tagged)
    untagged = [s["tags"] for t in traces for s in t if "gen_ai.conversation.id" not in s.get("tags", {})]
    assert all("session.id" not in tags for tags in untagged)


def _browse(stack, chromium, tmp_path, link: str, shot: str) -> set[str]:
    dom = chromium(link, "--dump-dom").stdout
    png = tmp_path / shot
    chromium(link, f"--screenshot={png}", "--window-size=1400,{}".format(900 if "trace." in shot else 420),
             "--hide-scrollbars")
    assert png.stat().st_size > 20_000  # a rendered page, not a blank one
    keep = os.environ.get("AGENT_IDENTITY_SCREENSHOTS")
    if keep and shot.startswith("zipkin-"):
        shutil.copy(png, os.path.join(keep, shot))
    return set(TRACE_LINK.findall(dom))


@pytest.mark.parametrize("specialist", [CORRECT, FORGETFUL])
def test_conversation_link_shows_exactly_its_traces_in_a_browser(stack, chromium, tmp_path, specialist):
    link = stack.zipkin.conversation_link(stack.conversation_of(specialist))
    shot = "zipkin-conversation.png" if specialist == FORGETFUL else "conversation-correct.png"
    assert _browse(stack, chromium, tmp_path, link, shot) == stack.traces_of(specialist)


def test_flagged_link_shows_exactly_the_forgetful_hops_in_a_browser(stack, chromium, tmp_path):
    assert _browse(stack, chromium, tmp_path, stack.zipkin.flagged_link(), "zipkin-flagged-hops.png") \
        == stack.traces_of(FORGETFUL)


def test_a_flagged_trace_opens_with_both_services_in_a_browser(stack, chromium, tmp_path):
    trace_id = sorted(stack.traces_of(FORGETFUL))[0]
    link = f"{stack.zipkin.url}/zipkin/traces/{trace_id}"
    _browse(stack, chromium, tmp_path, link, "zipkin-flagged-trace.png")
    text = re.sub(r"<[^>]+>", " ", chromium(link, "--dump-dom").stdout)
    assert trace_id in text and "orchestrator: invoke_agent" in text
    assert f"{FORGETFUL}: invoke_agent {FORGETFUL}" in text


def test_duplicates_link_shows_exactly_the_retried_turn_in_a_browser(stack, chromium, tmp_path):
    retried = {r["trace_id"] for r in stack.records if r["attempt"] > 1}
    assert len(retried) == 1
    assert _browse(stack, chromium, tmp_path, stack.zipkin.duplicates_link(), "duplicates.png") == retried
