"""The pure conversation rules of a run's agent span: which id and source it reports at the end.

No state, no I/O: functions of the extractor's answers before and after the run
(:class:`~otel_agent_identity.extractors.Extracted`, ``(conversation_id, source)``).
"""

from __future__ import annotations

from typing import Any

from otel_agent_identity import attributes as attrs
from otel_agent_identity.extractors import SOURCE_SERVICE, Extracted


def is_break(pre: Extracted | None, post: Extracted | None) -> bool:
    """A continuity break: the same extractor step answered with another id after the run."""
    return bool(pre and post and pre.source == post.source and post.conversation_id != pre.conversation_id)


def run_conversation_attributes(pre: Extracted | None, post: Extracted | None, run_id: str | None) -> dict[str, Any]:
    """The agent span's conversation attributes at the run's end.

    Args:
        pre / post: the extractor's answers before and after the run.
        run_id: the id the run's spans carry (the scope's), or None.
    A continuity break (same step, another id) reports ``post`` with ``requested_id``/``changed``;
    otherwise the run's id, else ``post``'s. The source is the step that gave that id, or
    ``service`` for an id only the service's response gave (a run without a session).
    """
    if is_break(pre, post):
        return conversation_attributes(pre, post)
    cid = run_id or (post.conversation_id if post else None)
    if cid is None:
        return {}
    if post is not None and post.conversation_id == cid:
        source = post.source
    elif pre is not None and pre.conversation_id == cid:
        source = pre.source
    else:
        source = SOURCE_SERVICE
    return {attrs.GEN_AI_CONVERSATION_ID: cid, attrs.CONVERSATION_SOURCE: source}


def conversation_attributes(pre: Extracted | None, post: Extracted | None) -> dict[str, Any]:
    """The agent span's conversation attributes from the ids before and after the run.

    A continuity break (:func:`is_break`) adds ``requested_id`` (the id before) and ``changed``;
    a framework fallback before the run replaced by the service's id after it is the first turn.
    """
    effective = post or pre
    if effective is None:
        return {}
    out: dict[str, Any] = {
        attrs.GEN_AI_CONVERSATION_ID: effective.conversation_id,
        attrs.CONVERSATION_SOURCE: effective.source,
    }
    if pre and post and is_break(pre, post):
        out[attrs.CONVERSATION_REQUESTED_ID] = pre.conversation_id
        out[attrs.CONVERSATION_CHANGED] = True
    return out
