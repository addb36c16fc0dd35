"""The agent span of a run (:class:`AgentSpan`, a part of :class:`~otel_agent_identity._runs.Run`):
the span we make (:class:`SpanSpec`) or the framework's own ``invoke_agent`` span we claim, its
attributes at the start and, after the run, the post-run conversation id, the signals and the ids a
count limit evicted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import SpanKind

from otel_agent_identity import _signals as signals
from otel_agent_identity import attributes as attrs
from otel_agent_identity._conversation import run_conversation_attributes
from otel_agent_identity._errors import end_span
from otel_agent_identity.boundary import check_served
from otel_agent_identity.extractors import RunCall
from otel_agent_identity.span_processor import PROTECTED, attributes_of, forget_writes, set_trusted

_logger = logging.getLogger(__name__)

#: the GenAI semconv attributes an ``invoke_agent`` span requires: on our own span they are written
#: again, as the newest, when a count limit evicted attributes (it evicts the oldest first)
_GENAI_REQUIRED = frozenset({attrs.GEN_AI_OPERATION_NAME, attrs.GEN_AI_PROVIDER_NAME})


def _value_length_limit() -> int | None:
    """The span attribute value length limit of the environment (``SpanLimits()``:
    ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``, else ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``); None
    when unlimited. A limit given in code (``TracerProvider(span_limits=...)``) is not public."""
    try:
        from opentelemetry.sdk.trace import SpanLimits

        limit = SpanLimits().max_span_attribute_length
    except Exception:
        return None
    return limit if type(limit) is int else None


def _warn_short_values(provider: Any, config: Any) -> None:
    """Warn (once per ``instrument()``: the processor is attached once) when the environment's
    limit cuts span attribute values shorter than the ids we accept (``config.max_id_length``)."""
    limit = _value_length_limit()
    longest = getattr(config, "max_id_length", None)
    if limit is not None and isinstance(longest, int) and limit < longest:
        _logger.warning(
            "otel-agent-identity: span attribute values are cut at %d characters "
            "(OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) "
            "but ids of up to %d are accepted "
            "(OTEL_INSTRUMENTATION_AGENT_IDENTITY_MAX_ID_LENGTH): a longer id is cut on spans, and a caller "
            "and callee that cut it differently make the collector report context_changed falsely; "
            "set the limit to at least %d, or max_id_length to at most %d",
            limit,
            longest,
            longest,
            limit,
        )


@dataclass
class SpanSpec:
    """An agent span to create because the framework emits none (``kind``: CLIENT for remote agents).

    ``on_end(result) -> dict``: attributes read from the run's result just before the span ends
    (called only when the run returned one; what it raises is logged, the span still ends).
    ``on_error(error) -> dict``: the same for a run that raised ``error`` (a failure or not).
    """

    name: str
    kind: SpanKind = SpanKind.INTERNAL
    attributes: dict[str, Any] = field(default_factory=dict)
    #: exception types that end the run as control flow, not as its failure (e.g. LangGraph's
    #: ``GraphBubbleUp``: an interrupt or a ``Command`` to the parent graph); the span stays OK
    not_failures: tuple = ()
    on_end: Callable[[Any], dict[str, Any]] | None = None
    on_error: Callable[[BaseException], dict[str, Any]] | None = None


class AgentSpan:
    """The agent-span half of a :class:`~otel_agent_identity._runs.Run` (its fields are the run's)."""

    __slots__ = ()
    # the run's fields (declared for the type checker; set by Run.__init__)
    scope: Any
    span: Any
    _h: Any
    _call: Any  # a RunCall
    _pre: Any
    _resumed: bool | None
    _recheck: bool
    _agent: Any
    _session: Any
    _rule: Any
    _agent_step: Any
    _spec: Any
    _noted: set[str] | None
    _own_story: bool

    def _first_attributes(self) -> dict:
        """Agent span attributes known at its start: the scope's ids, the conversation's source,
        the enclosing run's ids, whether the run resumes state."""
        scope, pre = self.scope, self._pre
        first = dict(scope.attributes)
        if pre is not None:
            first[attrs.GEN_AI_CONVERSATION_ID] = pre.conversation_id
            first[attrs.CONVERSATION_SOURCE] = pre.source
        if scope.parent_execution_id:
            first[attrs.PARENT_EXECUTION_ID] = scope.parent_execution_id
        if self._resumed is not None:
            first[attrs.CONVERSATION_RESUMED] = self._resumed
        if scope.parent_conversation_id:
            first[attrs.PARENT_CONVERSATION_ID] = scope.parent_conversation_id
        return first

    def _claim(self, span) -> None:
        """The framework's own invoke_agent span started in this run: enrich it, finish it as it ends."""
        set_trusted(span, self._first_attributes())
        self._h.processor.watch(span, self._finish_claimed)

    def _finish_claimed(self, span) -> None:
        """The claimed span ends: the post-run id; ours a count limit evicted written again."""
        self._finish_span(span)
        if span.dropped_attributes:
            self._put_back(span)

    def _finish_span(self, span, result: Any = None) -> None:
        pre, scope = self._pre, self.scope
        if self._recheck:
            c = self._call
            post = self._h.registry.extract(
                self._agent,
                self._session,
                RunCall(c.framework, c.args, c.kwargs, "after", result, c.outer),
                self._rule,
                self._agent_step,
            )
        else:
            post = pre
        effective = scope.conversation_id
        if post == pre and (effective is None if pre is None else pre.conversation_id == effective):
            # the common turn: the same answer before and after, nothing learnt: the first attributes stand,
            # unless the framework set its own value on its span since (on a span of ours, the
            # application's value stands: _theirs)
            if (
                effective is not None
                and attributes_of(span).get(attrs.GEN_AI_CONVERSATION_ID) != effective
                and not self._theirs(span)
            ):
                set_trusted(span, {attrs.GEN_AI_CONVERSATION_ID: effective})
        else:
            effective = self._finish_changed(span, pre, post)
        if scope.parent_execution_id is None:  # the run serving an inbound hop, if any
            check_served(effective)
            signals.check_served_conversation(span, self._agent, self._call.framework, effective, self._resumed)
        elif scope.parent_conversation_id and (self._spec is None or self._spec.kind is not SpanKind.CLIENT):
            # a nested run in this process (a CLIENT run is a hop: its conversation is the remote one)
            signals.check_parent(span, scope, effective, self._own_story, self._agent, self._call.framework)

    def _theirs(self, span) -> bool:
        """Whether the application wrote its own ``gen_ai.conversation.id`` on the run's span since
        we last did, on a span we made (``SpanSpec``: LangGraph, OpenAI Agents, Agno, Pydantic AI
        without its native spans): its value wins, the run's end keeps it (the run's own id still
        drives the hop checks and the spans inside the run). A framework's own span (claimed) gets
        the run's id over the framework's value."""
        noted = self._noted
        return noted is not None and attrs.GEN_AI_CONVERSATION_ID in noted

    def _finish_changed(self, span, pre, post) -> str | None:
        """The post-run id differs from the run's: a continuity break, an id learnt during the run,
        or a fallback replaced. Returns the agent span's conversation id."""
        out = run_conversation_attributes(pre, post, self.scope.conversation_id)
        current = attributes_of(span)
        changed = {k: v for k, v in out.items() if current.get(k) != v}
        if attrs.GEN_AI_CONVERSATION_ID in changed and self._theirs(span):
            del changed[attrs.GEN_AI_CONVERSATION_ID]
        if changed:
            set_trusted(span, changed)
        effective = out.get(attrs.GEN_AI_CONVERSATION_ID)
        if changed.get(attrs.CONVERSATION_CHANGED):  # newly marked: counted once per span
            signals.count_changed(self._agent, self._call.framework)
        if effective and effective != self.scope.conversation_id:
            self.scope.adopt(effective)
        return effective

    def _put_back(self, span) -> None:
        """Our ids on the run's own span made the newest (after the GenAI required attributes): a
        count limit evicted some. Each keeps the value it has (the application's stands); one
        evicted is written again, but for one the application wrote (its value went, ours does not
        come in its place)."""
        current, noted = attributes_of(span), self._noted or ()
        ours = {k: v for k, v in self._first_attributes().items() if k in PROTECTED}
        if self.scope.conversation_id is not None:
            ours[attrs.GEN_AI_CONVERSATION_ID] = self.scope.conversation_id
        ids = {k: current.get(k, v) for k, v in ours.items() if k in current or k not in noted}
        if ids:
            set_trusted(span, ids)

    def _end_own_span(self, span, result: Any, error: BaseException | None) -> None:
        """The run's own span (a :class:`SpanSpec`) ends: the post-run id, the spec's attributes of
        the result or error, ours and the required ones a count limit evicted, the status."""
        spec = self._spec
        try:
            self._finish_span(span, result)
            if result is not None and spec.on_end is not None:
                span.set_attributes(spec.on_end(result))
            if error is not None and spec.on_error is not None:
                span.set_attributes(spec.on_error(error))
            if getattr(span, "dropped_attributes", 0):  # a count limit evicts the oldest: the required, then ours last
                span.set_attributes({k: v for k, v in spec.attributes.items() if k in _GENAI_REQUIRED})
                self._put_back(span)
        except Exception:
            _logger.debug("otel-agent-identity: finishing the run failed", exc_info=True)
        if self._noted is not None:
            forget_writes(span)
        end_span(span, error, spec.not_failures)  # never raises: the caller re-raises the application's own error
