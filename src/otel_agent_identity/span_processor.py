"""Stamps the run's ids on every span started inside it, and finishes agent spans as they end.

The application's own value of one of our attributes always wins: an id it set when creating the
span, or later, is never overwritten by a stamp, and one that a count limit evicted is never put
back as ours. To tell its writes from ours, the SDK's one write path of a span's attributes
(``BoundedAttributes._setitem_locked``) is hooked at the class (:func:`install`): every write of
one of our keys by anyone but us is noted on that span's attribute store. The store's class is
never changed (instances of two classes in the SDK's attribute code would keep its specialised
bytecode deoptimised for every span: see docs/benchmarks.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Span, SpanProcessor

from otel_agent_identity import attributes as attrs
from otel_agent_identity.scope import SCOPE_KEY, SUPPRESS_KEY, SUPPRESS_KEY_PLAIN, current_context

_logger = logging.getLogger(__name__)

Finisher = Callable[[Span], None]
#: our ids: never written over the application's own value; evicted by ``max_span_attributes``
#: when they were ours, they are put back as the span ends, in place of others
PROTECTED = frozenset(
    {
        attrs.GEN_AI_CONVERSATION_ID,
        attrs.EXECUTION_ID,
        attrs.DELEGATION_ID,
        attrs.PARENT_EXECUTION_ID,
        attrs.PARENT_CONVERSATION_ID,
    }
)
#: the record on a span's ``BoundedAttributes`` (an instance attribute; the class is untouched) of
#: what we own there, for the span's end (:meth:`IdentitySpanProcessor._on_ending`): the run's
#: scope (a stamp: ``scope.attributes``), or ``(our attributes, the run's scope or None)``; or a
#: frozenset of our keys someone else wrote before we wrote any (at the span's creation).
#: It lives and dies with the span: nothing to bound, nothing kept for a span that never ends.
_REC = "_agent_identity"


def _written(store: BoundedAttributes, key: str) -> None:
    """Someone else (the application, a framework) wrote ``key``, one of ours, on ``store``: from
    now on the value is theirs on this span; we never put ours back over it."""
    try:
        rec = getattr(store, _REC, None)
        if rec is None:
            setattr(store, _REC, frozenset((key,)))
        elif type(rec) is frozenset:
            setattr(store, _REC, rec | {key})
        else:
            values, scope = rec if type(rec) is tuple else (rec.attributes, rec)
            if key in values:
                values = dict(values)  # a copy, not a comprehension: no Python call per note
                del values[key]
                setattr(store, _REC, (values, scope))
    except Exception:
        _logger.debug("otel-agent-identity: could not note a write", exc_info=True)


_SDK_LOGGER = logging.getLogger("opentelemetry.attributes")  # the logger of the SDK's own write


def _sdk_setitem_locked(self, key, value):
    if key in self._dict:
        del self._dict[key]
    if self.maxlen is not None and len(self._dict) >= self.maxlen:
        _logger.warning(
            "Attributes dict is full. Dropping the oldest key-value pair from attributes to make space for the new key-value pair.",
        )
        del self._dict[next(iter(self._dict.keys()))]
        self.dropped += 1
    self._dict[key] = value


def _setitem_noted(self, key, value):
    if key in self._dict:
        del self._dict[key]
    if self.maxlen is not None and len(self._dict) >= self.maxlen:
        _SDK_LOGGER.warning(
            "Attributes dict is full. Dropping the oldest key-value pair from attributes to make space for the new key-value pair.",
        )
        del self._dict[next(iter(self._dict.keys()))]
        self.dropped += 1
    self._dict[key] = value
    if key in PROTECTED:
        _written(self, key)


def _same_code(a: Any, b: Any) -> bool:
    a, b = a.__code__, b.__code__
    return a.co_code == b.co_code and a.co_consts == b.co_consts and a.co_names == b.co_names


def install() -> None:
    """Hook the SDK's attribute write (``BoundedAttributes._setitem_locked``, every write of a
    span's attributes, at creation or later, goes through it) at the class: after the SDK's own
    write, a write of one of our keys is noted by :func:`_written`. When the SDK's write is the one
    this package knows (opentelemetry-sdk 1.45's, compared by bytecode), the hook is that same code
    with the note after it, so a write of another key pays one frozenset lookup and no call more
    (as a wrapper, one Python call per write: ~0.7 K instructions, 0.25-0.45 bare span per Agent
    Framework turn); another SDK's write is wrapped. Once, until :func:`uninstall`. An SDK without
    that method (outside the supported range) gets no hook: an application's id set after the
    span's start can then be evicted and ours put back as the span ends."""
    original = BoundedAttributes.__dict__.get("_setitem_locked")
    if original is None or getattr(original, "_agent_identity_original", None) is not None:
        return
    if _same_code(original, _sdk_setitem_locked):
        hooked = _setitem_noted
    else:

        def hooked(self, key, value, _write=original, _ours=PROTECTED, _note=_written):
            _write(self, key, value)
            if key in _ours:
                _note(self, key)

    hooked._agent_identity_original = original
    BoundedAttributes._setitem_locked = hooked


def uninstall() -> None:
    """Undo :func:`install` (``uninstrument()``): the SDK's own write again."""
    hooked = BoundedAttributes.__dict__.get("_setitem_locked")
    original = getattr(hooked, "_agent_identity_original", None)
    if original is not None:
        BoundedAttributes._setitem_locked = original


def _keep(store: BoundedAttributes, values: dict, scope: Any = None) -> None:
    """Record ``values`` (ours, just written on ``store``) to put back at the span's end if the
    count limit evicts them, and the run's ``scope`` (a stamp) for its ``span_ending`` hook."""
    rec = getattr(store, _REC, None)
    if rec is None or type(rec) is frozenset:
        setattr(store, _REC, (values, scope))
    elif type(rec) is tuple:
        setattr(store, _REC, ({**rec[0], **values}, rec[1] if scope is None else scope))
    else:  # a stamp
        setattr(store, _REC, ({**rec.attributes, **values}, rec if scope is None else scope))


def _put(store: BoundedAttributes, values: dict, displace: bool = False) -> None:
    """Write ``values`` (ours, checked) into an open span's ``store``: a key it has keeps its place
    with our value; new keys go before every other (the oldest: a count limit evicts them first,
    so the span's own attributes fare as without us while it is open). When they do not all fit
    under the count limit: with ``displace``, the oldest attributes that are not ids
    (:data:`PROTECTED`) make room, as the SDK's eviction would; else the ones that do not fit are
    not written (put back as the span ends). Either way counted in ``dropped``. Str values are cut
    to ``max_value_len`` as the SDK cuts them."""
    cut = store.max_value_len
    if cut is not None:
        values = {k: v[:cut] if type(v) is str else v for k, v in values.items()}
    plain = store._dict
    new = values
    if not plain.keys().isdisjoint(values):
        new = {}
        for key, value in values.items():
            if key in plain:
                plain[key] = value
            else:
                new[key] = value
    if not new:
        return
    maxlen = store.maxlen
    if maxlen is not None and len(plain) + len(new) > maxlen:
        excess = len(plain) + len(new) - maxlen
        if displace:
            for victim in [k for k in plain if k not in PROTECTED][:excess]:
                del plain[victim]
                store.dropped += 1
                excess -= 1
        if excess:
            store.dropped += excess
            new = dict(list(new.items())[: len(new) - excess])
    if plain:
        store._dict = {**new, **plain}
    else:
        plain.update(new)


def set_ids(span: Span, values: dict) -> None:
    """``span.set_attributes(values)`` for ids that are not checked ones of ours (e.g. an A2A
    ``contextId`` as the server sent it): the SDK validates them; under a count limit, an evicted
    one is put back as the span ends, as by :func:`set_trusted`."""
    span.set_attributes(values)
    store = getattr(span, "_attributes", None)
    if getattr(store, "maxlen", None) is not None and span._end_time is None:
        _keep(store, values)  # after the write: the hook took it for someone else's


def replace_ending(span: Span, key: str, value: str | None) -> None:
    """On a span that is ending (a ``span_ending`` hook): set ``key`` to ``value`` (a checked id, cut
    to ``max_value_len`` as the SDK cuts str values; put back in place of another attribute when a
    count limit evicted the key), or remove it when ``value`` is None. In place: the span's store
    takes no API writes any more."""
    store = span._attributes
    if value is None:
        store._dict.pop(key, None)
    elif key in store._dict:
        cut = store.max_value_len
        store._dict[key] = value if cut is None else value[:cut]
    else:
        _restore(store, {key: value})


def _restore(store: BoundedAttributes, kept: dict) -> None:
    """Put back our ids the count limit evicted from an ending span's ``store``, each in place of the
    oldest attribute that is not one of :data:`PROTECTED` (the eviction was counted in ``dropped``
    already), cut to ``max_value_len`` as the SDK cuts str values."""
    plain, maxlen, cut = store._dict, store.maxlen, store.max_value_len
    for key, value in kept.items():
        if key not in PROTECTED or key in plain or type(value) is not str:
            continue
        if maxlen is not None and len(plain) >= maxlen:
            victim = next((k for k in plain if k not in PROTECTED), None)
            if victim is None:
                return
            del plain[victim]
        plain[key] = value if cut is None else value[:cut]


def attributes_of(span: Span) -> Mapping[str, Any]:
    """A span's attributes as a read-only-by-convention mapping: the SDK's own store when there is
    one (``span.attributes`` builds a new view on every access), else ``span.attributes``."""
    plain = getattr(getattr(span, "_attributes", None), "_dict", None)
    return plain if plain is not None else (span.attributes or {})


def set_trusted(span: Span, values: dict, scope: Any = None) -> None:
    """Set attributes whose values are ours and already valid (checked id strings, bools) on a
    recording span: straight into the span's attribute store (the SDK's per-value validation is
    most of a ``set_attributes`` call; its limits are applied here, see :func:`_put`), else
    through the public API (not an SDK span, or ended). A value the span has is replaced (this is
    the adapter's decision, e.g. the run's id on its agent span); under a full count limit, the
    oldest attributes that are not ids make room. Our ids
    among ``values`` that the SDK evicts later are put back as the span ends (see
    :func:`_restore`); ``scope``: the run whose stamp this is (its ``span_ending`` hook then
    applies to the span).
    """
    try:
        store = span._attributes
        open_ = span._end_time is None and type(store) is BoundedAttributes
    except AttributeError:  # not an SDK span: the API decides
        open_ = False
    if not open_:
        span.set_attributes(values)
        return
    with store._lock:  # the SDK's writers hold it too: _put may replace the store's dict
        _put(store, values, displace=True)
    if store.maxlen is not None or scope is not None:
        _keep(store, values, scope)


def _stamp(span: Span, store: BoundedAttributes, scope: Any) -> None:
    """Stamp a span that has attributes from its creation: our ids it already has, or had before
    a count limit evicted them, are the application's and stay as they are."""
    values = scope.attributes
    plain = store._dict
    if not plain.keys().isdisjoint(values):
        values = {k: v for k, v in values.items() if k not in plain}
    if store.dropped:
        theirs = getattr(store, _REC, None)
        if type(theirs) is frozenset:
            values = {k: v for k, v in values.items() if k not in theirs}
    if values:
        _put(store, values)
    if values is scope.attributes:
        setattr(store, _REC, scope)
    else:
        setattr(store, _REC, (values, scope))


class IdentitySpanProcessor(SpanProcessor):
    """Adds ``gen_ai.conversation.id``, ``agent_identity.execution.id`` and ``agent_identity.delegation.id``
    of the run's :class:`~otel_agent_identity.scope.IdentityScope` to each span when it starts: the
    scope in the ``parent_context`` its ``on_start`` receives (the current context when None). An
    id the span already has (the application's, set at its creation) is kept; nothing is stamped
    while instrumentation is suppressed (``suppress_instrumentation``).

    It also runs a *finisher* on a watched span just before it ends: that is how a framework's own
    ``invoke_agent`` span gets the conversation id the service assigned during the run. Register with
    ``TracerProvider.add_span_processor``; :class:`AgentIdentityInstrumentor` does this itself.
    """

    def __init__(self, stamp_spans: bool = True) -> None:
        install()
        self.enabled = True
        self.stamp_spans = stamp_spans

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        ctx = current_context() if parent_context is None else parent_context
        scope = ctx.get(SCOPE_KEY)
        if scope is None or not self.enabled or ctx.get(SUPPRESS_KEY) or ctx.get(SUPPRESS_KEY_PLAIN):
            return
        claim = scope.claim_agent_span
        if claim is not None and span.name.startswith("invoke_agent"):
            scope.claim_agent_span = None
            try:
                claim(span)  # the run's agent span: its ids and what the run knows at its start
                return
            except Exception:
                _logger.debug("otel-agent-identity: could not enrich the agent span", exc_info=True)
        attributes = scope.attributes
        if not attributes or not self.stamp_spans:
            return
        try:
            store = span._attributes
            if type(store) is BoundedAttributes and span._end_time is None:
                plain, maxlen = store._dict, store.maxlen  # the common cases inline (every span in a run)
                if (
                    not store.dropped
                    and store.max_value_len is None
                    and (maxlen is None or len(plain) + len(attributes) <= maxlen)
                ):
                    if not plain:
                        plain.update(attributes)
                    elif plain.keys().isdisjoint(attributes):
                        store._dict = {**attributes, **plain}  # ours first: a count limit evicts them first
                    else:
                        _stamp(span, store, scope)  # it has one of our ids from its creation: theirs wins
                        return
                    if maxlen is not None or scope.span_ending is not None:
                        store._agent_identity = scope
                    return
                _stamp(span, store, scope)
                return
        except Exception:
            _logger.debug("otel-agent-identity: could not stamp a span", exc_info=True)
            return
        set_trusted(span, attributes, scope)

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook as a span ends (end time set, before any processor's ``on_end``): our ids
        that the attribute count limit evicted are put back (never one the application wrote
        itself); a span whose conversation id is not the run's any more goes to the run's
        ``span_ending`` hook (see :class:`~otel_agent_identity.scope.IdentityScope`)."""
        try:
            store = span._attributes
            rec = getattr(store, _REC, None)
            if rec is None:
                return
            if type(rec) is tuple:
                kept, scope = rec
            elif type(rec) is frozenset:
                return
            else:  # a stamp: the scope itself
                scope = rec
                if scope.span_ending is None and not store.dropped:
                    store._agent_identity = None
                    return  # the common case: nothing evicted, no hook
                kept = scope.attributes
            store._agent_identity = None
            if store.dropped:
                _restore(store, kept)
            if (
                scope is not None
                and scope.span_ending is not None
                and store._dict.get(attrs.GEN_AI_CONVERSATION_ID) != scope.conversation_id
            ):
                scope.span_ending(span, scope)
        except Exception:
            _logger.debug("otel-agent-identity: could not finish an ending span", exc_info=True)

    def watch(self, span: Span, finisher: Finisher) -> None:
        """Call ``finisher(span)`` once, just before ``span`` ends, while it still takes attributes.

        The span's ``end`` is shadowed on this one span object (every caller, ``use_span`` and
        ``start_as_current_span`` included, reaches it through attribute lookup): no per-span hook
        is paid by the other spans, and no SDK internals are touched.
        """
        original = span.end

        def end(end_time: int | None = None) -> None:
            if span.__dict__.get("end") is end:
                del span.end  # once; the class's end (or an earlier watcher's) from now on
            try:
                finisher(span)
            except Exception:
                _logger.debug("otel-agent-identity: finisher failed", exc_info=True)
            original(end_time)

        span.end = end
