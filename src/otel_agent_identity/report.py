"""Recent conversations from a Zipkin server, with their hop verdicts: which broke, and where.

    python -m otel_agent_identity.report --zipkin http://127.0.0.1:9411 [--since 1h] [--json]

Reads the spans the collector's ``agentidentity`` processor marked (``zipkin`` exporter), with
Zipkin's API v2 only (``GET /api/v2/traces``, standard library HTTP). A trace belongs to the
conversation of its earliest span carrying ``gen_ai.conversation.id`` (the entry agent's; the
contextId an A2A hop asked to continue and the one the callee answered in are shown on the hop),
and so do its hops; when that id is itself the context of one of its hops (a caller with no agent
run of its own, whose first send carries the first callee's context), each hop belongs to the
conversation of the callee's: the context it asked to continue, else the one answered in.
Per conversation: its turns (traces), the services its traces went through, every hop the processor
judged (``agent_identity.hop.result``: flagged when ``agent_identity.hop.mismatch`` is true, the
result then being the reason, ``context_changed`` or ``state_not_resumed``) and the duplicate
executions (``agent_identity.delegation.duplicate``). Names: docs/attributes.md; the hop model:
collector/processor/agentidentityprocessor/README.md.

Exit status: 0 when no conversation has a flagged hop or a duplicate execution, 1 when some have,
2 when Zipkin could not be read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from .attributes import DELEGATION_DUPLICATE, DELEGATION_ID, GEN_AI_CONVERSATION_ID

# Set by the collector processor (docs/attributes.md, "set by: col").
HOP_RESULT = "agent_identity.hop.result"
HOP_MISMATCH = "agent_identity.hop.mismatch"
HOP_CALLER_SERVICE = "agent_identity.hop.caller.service.name"
HOP_REQUESTED = "agent_identity.hop.requested_id"
HOP_CALLEE_CONVERSATION = "agent_identity.hop.callee.conversation.id"
HOP_CALLEE_RESUMED = "agent_identity.hop.callee.resumed"


def hop_conversations(attributes: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The contextId a judged hop asked to continue and the one the callee answered in, from the
    attributes (Zipkin tags or OTLP attributes) of the callee's entry span the processor marked.

    On a healthy hop (``continued``, ``first_turn``, ``not_required``) the processor writes each id
    once (docs/attributes.md): the answered one is the entry span's own ``gen_ai.conversation.id``
    unless ``agent_identity.hop.callee.conversation.id`` is written, and on ``continued`` the
    requested one equals it. Flagged and unknown verdicts carry every id.

    Args:
        attributes: the entry span's attributes (values as the backend gives them).

    Returns:
        ``(asked, used)``: ``agent_identity.hop.requested_id`` (None on a first turn or when no rule
        required the hop), and ``agent_identity.hop.callee.conversation.id``, else the span's
        ``gen_ai.conversation.id`` (None when the callee reported none).
    """
    used = attributes.get(HOP_CALLEE_CONVERSATION) or attributes.get(GEN_AI_CONVERSATION_ID) or None
    asked = attributes.get(HOP_REQUESTED) or None
    if asked is None and attributes.get(HOP_RESULT) == "continued":
        asked = used
    return asked, used


_DURATION = re.compile(r"^(\d+)(s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass
class Hop:
    """One span the processor judged: ``callee`` is the span's service, ``caller`` the service the
    processor recorded; ``result`` its verdict (the reason when ``flagged``); ``asked`` the contextId
    the caller requested (``agent_identity.hop.requested_id``, None on a first turn), ``used`` the
    one the callee answered in (``agent_identity.hop.callee.conversation.id``, else the entry span's
    ``gen_ai.conversation.id``: see hop_conversations), ``resumed`` whether
    the callee's serving run resumed prior state (``agent_identity.hop.callee.resumed``, None when
    not recorded)."""

    trace_id: str
    span_id: str
    caller: str | None
    callee: str | None
    result: str
    flagged: bool
    duplicate: bool
    asked: str | None
    used: str | None
    resumed: bool | None
    delegation_id: str | None

    def why(self) -> str:
        """What the verdict means for this hop, in words (the table's flagged lines)."""
        if self.result == "context_changed":
            return f"asked to continue {self.asked}, the callee answered in {self.used}"
        if self.result == "state_not_resumed":
            return f"asked to continue {self.asked}, the callee answered in it without resuming its state"
        return f"asked {self.asked}, the callee answered in {self.used}"


@dataclass
class Conversation:
    id: str
    trace_ids: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    first_seen_us: int = 0
    last_seen_us: int = 0
    hops: list[Hop] = field(default_factory=list)

    @property
    def turns(self) -> int:
        return len(self.trace_ids)

    @property
    def flagged(self) -> list[Hop]:
        return [h for h in self.hops if h.flagged]

    @property
    def duplicates(self) -> list[Hop]:
        return [h for h in self.hops if h.duplicate]

    def results(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for hop in self.hops:
            out[hop.result] = out.get(hop.result, 0) + 1
        return dict(sorted(out.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "turns": self.turns,
            "trace_ids": self.trace_ids,
            "services": self.services,
            "first_seen": _iso(self.first_seen_us),
            "last_seen": _iso(self.last_seen_us),
            "results": self.results(),
            "flagged": len(self.flagged),
            "duplicates": len(self.duplicates),
            "hops": [asdict(h) for h in self.hops],
        }


def parse_since(text: str) -> int:
    """``30s``, ``15m``, ``1h``, ``7d`` -> seconds. Raises ValueError on anything else."""
    match = _DURATION.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"--since {text!r}: expected a positive duration like 30s, 15m, 1h or 7d")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def fetch_traces(
    zipkin: str, since_s: int, limit: int = 1000, end_ms: int | None = None, timeout: float = 30.0
) -> list[list[dict]]:
    """Traces (lists of Zipkin v2 span dicts) that have a ``gen_ai.conversation.id`` tag and a span
    in the ``since_s`` seconds before ``end_ms`` (default now), at most ``limit``. Raises
    urllib.error.URLError / ValueError when Zipkin cannot be read or answers something else."""
    end = end_ms if end_ms is not None else int(time.time() * 1000)
    query = urllib.parse.urlencode(
        {"annotationQuery": GEN_AI_CONVERSATION_ID, "endTs": end, "lookback": since_s * 1000, "limit": limit}
    )
    with urllib.request.urlopen(f"{zipkin.rstrip('/')}/api/v2/traces?{query}", timeout=timeout) as response:
        traces = json.load(response)
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        raise ValueError("Zipkin answered something that is not a list of traces")
    return traces


def conversations(traces: list[list[dict]]) -> list[Conversation]:
    """Group ``traces`` by conversation; broken ones (flagged hops or duplicates) first, then the
    most recently seen."""
    by_id: dict[str, Conversation] = {}
    for spans in traces:
        spans = [s for s in spans if isinstance(s, dict)]
        tagged = sorted((s for s in spans if _tags(s).get(GEN_AI_CONVERSATION_ID)), key=lambda s: s.get("timestamp", 0))
        if not tagged:
            continue
        entry = _tags(tagged[0])[GEN_AI_CONVERSATION_ID]
        hops = _hops(spans)
        own = entry not in {h.asked or h.used for h in hops}  # the caller's own conversation, not a callee's
        homes = {h.span_id: entry if own else (h.asked or h.used or entry) for h in hops}
        times = [int(s.get("timestamp", 0)) for s in spans if s.get("timestamp")]
        for conversation_id in [entry] if own else dict.fromkeys(homes.values()):
            conv = by_id.setdefault(conversation_id, Conversation(conversation_id))
            conv.trace_ids.append(str(spans[0].get("traceId", "")))
            mine = [h for h in hops if homes[h.span_id] == conversation_id]
            if own:  # every service of the trace
                services = {svc for s in spans if (svc := _service(s))}
            else:  # the services of its hops and of the spans that carry its id
                services = {svc for h in mine for svc in (h.caller, h.callee) if svc}
                services |= {
                    svc for s in tagged if _tags(s)[GEN_AI_CONVERSATION_ID] == conversation_id and (svc := _service(s))
                }
            conv.services = sorted(set(conv.services) | services)
            if times:
                conv.first_seen_us = min(times) if not conv.first_seen_us else min(conv.first_seen_us, min(times))
                conv.last_seen_us = max(conv.last_seen_us, max(times))
            conv.hops += mine
    for conv in by_id.values():
        conv.trace_ids.sort()
    return sorted(by_id.values(), key=lambda c: (not (c.flagged or c.duplicates), -c.last_seen_us))


def _hops(spans: list[dict]) -> list[Hop]:
    """The judged hops of one trace's ``spans`` (Zipkin v2 span dicts), in time order."""
    hops = []
    by_id_span = {s.get("id"): s for s in spans}
    for span in sorted(spans, key=lambda s: s.get("timestamp", 0)):
        tags = _tags(span)
        if HOP_RESULT not in tags:
            continue
        parent = by_id_span.get(span.get("parentId"), {})
        asked, used = hop_conversations(tags)
        hops.append(
            Hop(
                trace_id=str(span.get("traceId", "")),
                span_id=str(span.get("id", "")),
                caller=tags.get(HOP_CALLER_SERVICE),
                callee=_service(span),
                result=tags[HOP_RESULT],
                flagged=tags.get(HOP_MISMATCH) == "true",
                duplicate=tags.get(DELEGATION_DUPLICATE) == "true",
                asked=asked,
                used=used,
                resumed={"true": True, "false": False}.get(tags.get(HOP_CALLEE_RESUMED, "")),
                delegation_id=_tags(parent).get(DELEGATION_ID) or tags.get(DELEGATION_ID),
            )
        )
    return hops


def table(convs: list[Conversation], zipkin: str, since: str) -> str:
    """The human-readable report: one row per conversation, then every flagged hop and duplicate."""
    broken = [c for c in convs if c.flagged or c.duplicates]
    lines = [
        f"{len(convs)} conversation(s) in {zipkin} in the last {since}, {len(broken)} with flagged hops "
        "or duplicate executions"
    ]
    if convs:
        rows = [("CONVERSATION", "TURNS", "HOPS", "FLAGGED", "DUPLICATES", "LAST SEEN (UTC)", "SERVICES")]
        rows += [
            (
                c.id,
                str(c.turns),
                str(len(c.hops)),
                str(len(c.flagged)),
                str(len(c.duplicates)),
                _iso(c.last_seen_us)[11:19],
                ", ".join(c.services),
            )
            for c in convs
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1] for r in rows]
    for c in broken:
        lines.append(f"\n{c.id}:")
        for hop in c.flagged:
            lines.append(f"  flagged   trace {hop.trace_id}  {hop.caller} -> {hop.callee}: {hop.result} ({hop.why()})")
        for hop in c.duplicates:
            lines.append(
                f"  duplicate trace {hop.trace_id}  {hop.caller} -> {hop.callee}: another execution"
                f" of delegation {hop.delegation_id}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m otel_agent_identity.report", description=__doc__.splitlines()[0])
    parser.add_argument("--zipkin", required=True, metavar="URL", help="Zipkin base URL, e.g. http://127.0.0.1:9411")
    parser.add_argument("--since", default="1h", help="how far back: 30s, 15m, 1h, 7d (default 1h)")
    parser.add_argument("--limit", type=int, default=1000, help="most traces to read (default 1000)")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    args = parser.parse_args(argv)
    try:
        since_s = parse_since(args.since)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        convs = conversations(fetch_traces(args.zipkin, since_s, args.limit))
    except (OSError, ValueError) as exc:  # URLError is an OSError
        print(f"report: cannot read {args.zipkin}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {"zipkin": args.zipkin, "since_seconds": since_s, "conversations": [c.to_json() for c in convs]},
                indent=2,
            )
        )
    else:
        print(table(convs, args.zipkin, args.since))
    return 1 if any(c.flagged or c.duplicates for c in convs) else 0


def _tags(span: dict) -> dict:
    tags = span.get("tags")
    return tags if isinstance(tags, dict) else {}


def _service(span: dict) -> str | None:
    endpoint = span.get("localEndpoint")
    return endpoint.get("serviceName") if isinstance(endpoint, dict) else None


def _iso(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if us else ""


if __name__ == "__main__":
    sys.exit(main())
