"""Reading finished spans as a tree, for the framework suites."""

from __future__ import annotations


def in_run(spans, run_span) -> list:
    """Spans of the run's trace below ``run_span`` (by parent links), the run span included."""
    by_id = {s.context.span_id: s for s in spans}
    out = []
    for s in spans:
        node = s
        while node is not None:
            if node.context.span_id == run_span.context.span_id:
                out.append(s)
                break
            node = by_id.get(node.parent.span_id) if node.parent else None
    return out
