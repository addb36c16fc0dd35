"""Conversations in a real Zipkin, fed by the real collector from real agents: the backend's API,
the report command and the UI links (loaded in headless Chromium) each show exactly the traces
the orchestrator recorded for that conversation, and the flagged hops exactly the sends whose
specialist forgot (its model saw only the new message), with the reason the ground truth gives:
``context_changed`` (the reply came in another contextId) or ``state_not_resumed`` (same contextId,
no prior state). First turns and a specialist that continues are never flagged.

``AGENT_IDENTITY_SCREENSHOTS=DIR`` also keeps the screenshots named ``zipkin-*`` there (``make screenshots``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest
from backend_support import CHANGED, CONTINUES, FLAGGED, FORGETFUL, NOT_RESUMED, SPECIALISTS

pytestmark = [pytest.mark.e2e, pytest.mark.collector]

TRACE_LINK = re.compile(r'href="/zipkin/traces/([0-9a-f]{32})"')
REASON = {CHANGED: "context_changed", NOT_RESUMED: "state_not_resumed"}


def test_the_ground_truth_is_what_each_shape_does(stack):
    """The stack really has a specialist that continues and two that forget in different ways (so
    the checks below can fail both ways): the models' counts and the replies' contextIds."""
    for specialist in SPECIALISTS:
        results = [stack.expected(r) for r in stack.records if r["conversation"] == specialist]
        reason = REASON.get(specialist, "continued")
        assert results[0] == "first_turn" and set(results[1:]) == {reason}, (specialist, results)
    assert sorted(stack.conversations.values()) == sorted(SPECIALISTS)


def test_each_conversation_has_its_own_id_and_zipkin_lists_it(stack):
    listed = stack.zipkin.api("autocompleteValues", key="gen_ai.conversation.id")
    assert len(stack.conversations) == len(SPECIALISTS) and set(stack.conversations) <= set(listed)


@pytest.mark.parametrize("specialist", SPECIALISTS)
def test_zipkin_search_returns_exactly_the_conversations_traces(stack, specialist):
    conversation = stack.conversation_of(specialist)
    traces = stack.zipkin.api("traces", annotationQuery=f"gen_ai.conversation.id={conversation}", limit="1000")
    assert {t[0]["traceId"] for t in traces} == stack.traces_of(specialist)
    assert {s["localEndpoint"]["serviceName"] for t in traces for s in t} == {"orchestrator", specialist}


def _report(stack, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "otel_agent_identity.report", "--zipkin", stack.zipkin.url, "--since", "1h", *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_report_json_matches_the_ground_truth(stack):
    out = _report(stack, "--json")
    assert out.returncode == 1, out.stderr  # some conversation broke
    convs = {c["id"]: c for c in json.loads(out.stdout)["conversations"]}
    assert set(convs) == set(stack.conversations)
    for conversation, specialist in stack.conversations.items():
        c, records = convs[conversation], [r for r in stack.records if r["conversation"] == specialist]
        assert set(c["trace_ids"]) == stack.traces_of(specialist) and c["turns"] == 3
        assert set(c["services"]) == {"orchestrator", specialist}
        # one judged hop per send, retries included: the verdict, the contextId asked to continue
        # (none on a first turn) and the one the reply came in, as the orchestrator saw them
        got = Counter((h["trace_id"], h["result"], h["flagged"], h["asked"], h["used"]) for h in c["hops"])
        want = Counter(
            (r["trace_id"], stack.expected(r), stack.expected(r) in FLAGGED, r["requested"], r["answered"])
            for r in records
        )
        assert got == want, specialist
        assert c["flagged"] == sum(stack.expected(r) in FLAGGED for r in records)
        for hop in c["hops"]:
            if hop["result"] == "state_not_resumed":  # the id kept, the state lost
                assert hop["asked"] == hop["used"] and hop["resumed"] is False
            if specialist == CONTINUES and hop["result"] == "continued":
                assert hop["resumed"] is True
        duplicates = [h["trace_id"] for h in c["hops"] if h["duplicate"]]
        retried = sorted(r["trace_id"] for r in records if r["attempt"] > 1)
        assert duplicates == retried and c["duplicates"] == len(retried)
        assert len(retried) == (1 if specialist == CONTINUES else 0)


def test_report_table_names_every_conversation_and_each_flagged_hop(stack):
    out = _report(stack)
    assert out.returncode == 1, out.stderr
    assert f"{len(SPECIALISTS)} conversation(s)" in out.stdout
    for conversation in stack.conversations:
        assert conversation in out.stdout
    flagged = [line for line in out.stdout.splitlines() if line.lstrip().startswith("flagged")]
    assert {re.search(r"trace (\w+)", line).group(1) for line in flagged} == stack.flagged_traces()
    for line in flagged:
        specialist = next(s for s in FORGETFUL if f"orchestrator -> {s}: " in line)
        assert f"orchestrator -> {specialist}: {REASON[specialist]} (asked to continue " in line


def test_sessions_overlay_copies_the_conversation_id_into_session_id(stack):
    conversation = stack.conversation_of(CONTINUES)
    traces = stack.zipkin.api("traces", annotationQuery=f"gen_ai.conversation.id={conversation}", limit="1000")
    tagged = [s["tags"] for t in traces for s in t if "gen_ai.conversation.id" in s.get("tags", {})]
    assert tagged and all(tags.get("session.id") == tags["gen_ai.conversation.id"] for tags in tagged)
    untagged = [s["tags"] for t in traces for s in t if "gen_ai.conversation.id" not in s.get("tags", {})]
    assert all("session.id" not in tags for tags in untagged)


def _browse(stack, chromium, tmp_path, link: str, shot: str) -> set[str]:
    dom = chromium(link, "--dump-dom").stdout
    png = tmp_path / shot
    chromium(
        link,
        f"--screenshot={png}",
        "--window-size=1400,{}".format(900 if "trace" in shot else 420),
        "--hide-scrollbars",
    )
    assert png.stat().st_size > 20_000  # a rendered page, not a blank one
    keep = os.environ.get("AGENT_IDENTITY_SCREENSHOTS")
    if keep and shot.startswith("zipkin-"):
        shutil.copy(png, os.path.join(keep, shot))
    return set(TRACE_LINK.findall(dom))


@pytest.mark.parametrize("specialist", SPECIALISTS)
def test_conversation_link_shows_exactly_its_traces_in_a_browser(stack, chromium, tmp_path, specialist):
    link = stack.zipkin.conversation_link(stack.conversation_of(specialist))
    shot = "zipkin-conversation.png" if specialist == NOT_RESUMED else f"conversation-{specialist}.png"
    assert _browse(stack, chromium, tmp_path, link, shot) == stack.traces_of(specialist)


@pytest.mark.parametrize("reason", [None, *FLAGGED])
def test_flagged_link_shows_exactly_the_forgetful_sends_in_a_browser(stack, chromium, tmp_path, reason):
    want = stack.flagged_traces(reason)
    assert want == {
        r["trace_id"]
        for r in stack.records
        if r["turn"] > 1
        and r["conversation"] in ([s for s in FORGETFUL if REASON[s] == reason] if reason else FORGETFUL)
    }
    shot = "zipkin-flagged-hops.png" if reason is None else f"flagged-{reason}.png"
    assert _browse(stack, chromium, tmp_path, stack.zipkin.flagged_link(reason=reason), shot) == want


@pytest.mark.parametrize("specialist", FORGETFUL)
def test_a_flagged_trace_opens_with_both_services_in_a_browser(stack, chromium, tmp_path, specialist):
    trace_id = sorted(stack.flagged_traces(REASON[specialist]))[0]
    (entry,) = [s for s in stack.spans if s.trace_id == trace_id and s.attributes.get("agent_identity.hop.mismatch")]
    link = f"{stack.zipkin.url}/zipkin/traces/{trace_id}"
    shot = "zipkin-flagged-trace.png" if specialist == NOT_RESUMED else f"flagged-trace-{specialist}.png"
    _browse(stack, chromium, tmp_path, link, shot)
    text = re.sub(r"<[^>]+>", " ", chromium(link, "--dump-dom").stdout)
    assert trace_id in text and "orchestrator: invoke_agent" in text
    assert f"{specialist}: {entry.name.lower()}" in text  # the flagged entry span (Zipkin lowercases names)


def test_duplicates_link_shows_exactly_the_retried_turn_in_a_browser(stack, chromium, tmp_path):
    retried = {r["trace_id"] for r in stack.records if r["attempt"] > 1}
    assert len(retried) == 1
    assert _browse(stack, chromium, tmp_path, stack.zipkin.duplicates_link(), "duplicates.png") == retried
