"""Every use of the OpenTelemetry SDK's private API in this package, in this one module.

Each feature is detected once per process, when our span processor is first attached
(:func:`attach`), by a probe span on a provider of our own; a missing one is logged once (a
warning) and its public-API fallback is used from then on. Supported: the ``opentelemetry-sdk``
range of pyproject.toml (its upper bound is the newest version tests/test_sdk_features.py passed
on: that test fails when a supported SDK lacks a feature).

``store``
    An SDK span keeps its attributes in ``span._attributes``, a ``BoundedAttributes`` (of
    opentelemetry-api) whose ``_dict`` (insertion-ordered: a count limit evicts the oldest),
    ``maxlen``, ``max_value_len``, ``dropped`` and ``_lock`` are read and written here, and
    ``span._end_time`` is None while it is open. Used to stamp a span without the SDK's per-value
    validation (our values are checked ids), with our ids first (the oldest: a count limit evicts
    them before the span's own attributes), and to put back ours that a count limit evicted.
    Fallback: ``span.attributes`` and ``span.set_attributes``; our ids are then written after the
    span's creation attributes (under a count limit they can evict the oldest of those) and an
    evicted id of ours is not put back.
``writes``
    Every write of a span attribute goes through ``BoundedAttributes._setitem_locked``, hooked at
    the class (:func:`install`) to note a write of one of our ids by anyone but us (the application's
    value then wins over ours on that span: not put back, and a run's end does not write over it on
    the agent span we made, :func:`theirs`). Fallback: no notes; an id of ours that a count limit
    evicted is not put back (the evicted value may have been the application's), a span created
    over the count limit is not stamped with ours, and a run's end takes a value on its agent span
    that is not the one it wrote for the application's.
``ending``
    The SDK calls each span processor's ``_on_ending(span)`` as a span ends (end time set, before
    any processor's ``on_end``): our ids are put back there and the run's ``span_ending`` hook runs
    (:func:`finish`). Fallback: ``end`` is shadowed on each span that needs finishing (public API:
    it runs just before the SDK's ``end``, the span still open).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.attributes import BoundedAttributes

from otel_agent_identity import attributes as attrs

_logger = logging.getLogger(__name__)

#: the features (see the module's docstring): True where the SDK has it, set by :func:`detect`
STORE = WRITES = ENDING = False
FEATURES = ("store", "writes", "ending")
_detected: dict[str, bool] | None = None
_warned: set[str] = set()

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
#: what we own there, for the span's end (:func:`finish`): the run's scope (a stamp:
#: ``scope.attributes``), or ``(our attributes, the run's scope or None)``; or a frozenset of our
#: keys someone else wrote before we wrote any (at the span's creation).
#: It lives and dies with the span: nothing to bound, nothing kept for a span that never ends.
_REC = "_agent_identity"
#: in a record's values: a key of ours someone else wrote on the span (see :func:`_written`)
THEIRS = object()


# -- detection -----------------------------------------------------------------------------------


def detect(without: tuple[str, ...] | frozenset[str] = ()) -> dict[str, bool]:
    """Probe the SDK for each feature (a span on a provider of our own: no exporter, no sampler or
    limit of the application's, no metrics) and use the fallback of each one it lacks, or that
    ``without`` names (tests use it to exercise the fallbacks). A missing feature is logged once
    per process, a warning. Returns the features found. Never raises."""
    global STORE, WRITES, ENDING, _detected
    found = dict.fromkeys(FEATURES, False)
    quiet = False
    try:
        probed = _probe()
        quiet = probed is None  # OTEL_SDK_DISABLED: no span records anything, nothing to warn about
        found.update(probed or {})
    except Exception:
        _logger.debug("otel-agent-identity: probing the SDK failed", exc_info=True)
    for name in without:
        found[name] = False
    STORE, ENDING = found["store"], found["ending"]
    WRITES = STORE and found["writes"]  # the notes are read from the store
    if not WRITES:
        uninstall()
    _detected = found
    for name, present in found.items():
        if not present and not quiet and name not in without and name not in _warned:
            _warned.add(name)
            _logger.warning(
                "otel-agent-identity: this opentelemetry-sdk lacks the private API %r relies on (%s); "
                "using the public-API fallback",
                name,
                _WHAT[name],
            )
    return found


_WHAT = {
    "store": "span._attributes as BoundedAttributes with _dict, maxlen, max_value_len, dropped; span._end_time",
    "writes": "every attribute write through BoundedAttributes._setitem_locked",
    "ending": "SpanProcessor._on_ending called as a span ends",
}


def _probe() -> dict[str, bool] | None:
    from opentelemetry.context import Context
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    ended: list = []

    class Probe(SpanProcessor):
        def _on_ending(self, span: Any) -> None:
            ended.append((span, getattr(span, "_end_time", None)))

    options: dict[str, Any] = {
        "sampler": ALWAYS_ON,
        "resource": Resource.get_empty(),
        "shutdown_on_exit": False,
        "span_limits": SpanLimits(max_span_attributes=3, max_span_attribute_length=8),
    }
    try:
        provider = TracerProvider(**options, meter_provider=NoOpMeterProvider())
    except TypeError:  # an SDK without SDK metrics
        provider = TracerProvider(**options)
    provider.add_span_processor(Probe())
    span = provider.get_tracer(__name__).start_span("probe", context=Context(), attributes={"a": 1})
    if not span.is_recording():  # the SDK is disabled (OTEL_SDK_DISABLED)
        return None
    store = getattr(span, "_attributes", None)
    found = {
        "store": type(store) is BoundedAttributes
        and type(getattr(store, "_dict", None)) is dict
        and store._dict == {"a": 1}
        and getattr(store, "maxlen", None) == 3
        and getattr(store, "max_value_len", None) == 8
        and type(getattr(store, "dropped", None)) is int
        and hasattr(store, "_lock")
        and getattr(span, "_end_time", 0) is None
    }
    install()
    span.set_attribute(attrs.GEN_AI_CONVERSATION_ID, "app")
    found["writes"] = getattr(store, _REC, None) == frozenset((attrs.GEN_AI_CONVERSATION_ID,))
    span.end()
    found["ending"] = len(ended) == 1 and ended[0][0] is span and ended[0][1] is not None
    return found


def attach(processor_class: type) -> None:
    """Prepare the SDK for a processor of ``processor_class`` about to be attached: detect the
    features once per process (:func:`detect`), hook the attribute writes (:func:`install`) and
    make :func:`finish` the class's ``_on_ending`` where the SDK calls it. Never raises."""
    try:
        if _detected is None:
            detect()
        if WRITES:
            install()
        if ENDING:
            processor_class._on_ending = finish  # type: ignore[attr-defined]
        elif "_on_ending" in processor_class.__dict__:
            delattr(processor_class, "_on_ending")
    except Exception:
        _logger.debug("otel-agent-identity: could not prepare the SDK", exc_info=True)


def value_length_limit(provider: Any) -> int | None:
    """The attribute value length limit of an SDK ``provider``'s spans (its ``_span_limits``:
    ``OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT``, else ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, else
    the ``span_limits`` given in code); None when unlimited or not an SDK provider. Never raises."""
    limit = getattr(getattr(provider, "_span_limits", None), "max_span_attribute_length", None)
    return limit if type(limit) is int else None


# -- the attribute-write hook (feature "writes") ------------------------------------------------------


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
            if values.get(key) is not THEIRS:
                values = dict(values)  # a copy, not a comprehension: no Python call per note
                values[key] = THEIRS  # never put back (not a str), and theirs even once evicted
                setattr(store, _REC, (values, scope))
    except Exception:
        _logger.debug("otel-agent-identity: could not note a write", exc_info=True)


_SDK_LOGGER = logging.getLogger("opentelemetry.attributes")  # the logger of the SDK's own write
_FULL = (
    "Attributes dict is full. Dropping the oldest key-value pair from attributes to make space for the new "
    "key-value pair."
)


def _sdk_setitem_locked(self: Any, key: str, value: Any) -> None:
    if key in self._dict:
        del self._dict[key]
    if self.maxlen is not None and len(self._dict) >= self.maxlen:
        _logger.warning(
            "Attributes dict is full. Dropping the oldest key-value pair from attributes to make space for the new key-value pair.",  # noqa: E501
        )
        del self._dict[next(iter(self._dict.keys()))]
        self.dropped += 1
    self._dict[key] = value


def _setitem_noted(self: Any, key: str, value: Any) -> None:
    if key in self._dict:
        del self._dict[key]
    if self.maxlen is not None and len(self._dict) >= self.maxlen:
        _SDK_LOGGER.warning(_FULL)
        del self._dict[next(iter(self._dict.keys()))]
        self.dropped += 1
    self._dict[key] = value
    if key in PROTECTED:
        _written(self, key)


def _same_code(a: Any, b: Any) -> bool:
    """Whether functions ``a`` and ``b`` have the same bytecode, constants and names."""
    a, b = a.__code__, b.__code__
    return bool(a.co_code == b.co_code and a.co_consts == b.co_consts and a.co_names == b.co_names)


def install() -> None:
    """Hook the SDK's attribute write (``BoundedAttributes._setitem_locked``: every write of a
    span's attributes, at creation or later, goes through it) at the class: after the SDK's own
    write, a write of one of our keys is noted by :func:`_written`. When the SDK's write is the one
    this package knows (opentelemetry-sdk 1.45's, compared by bytecode: :func:`_sdk_setitem_locked`
    is its copy), the hook is that same code with the note after it, so a write of another key pays
    one frozenset lookup and no call more (as a wrapper, one Python call per write: ~0.7 K
    instructions, 0.25-0.45 bare span per Agent Framework turn); another SDK's write is wrapped.
    The store's class is never changed (instances of two classes in the SDK's attribute code would
    keep its specialised bytecode deoptimised for every span: see docs/benchmarks.md). Once, until
    :func:`uninstall`. Without the method, nothing is hooked (:func:`detect` then finds no
    ``writes``)."""
    original = BoundedAttributes.__dict__.get("_setitem_locked")
    if original is None or getattr(original, "_agent_identity_original", None) is not None:
        return
    hooked: Any
    if _same_code(original, _sdk_setitem_locked):
        hooked = _setitem_noted
    else:

        def hooked(self: Any, key: str, value: Any, _write=original, _ours=PROTECTED, _note=_written) -> None:
            _write(self, key, value)
            if key in _ours:
                _note(self, key)

    hooked._agent_identity_original = original
    BoundedAttributes._setitem_locked = hooked  # type: ignore[method-assign]


def uninstall() -> None:
    """Undo :func:`install` (``uninstrument()``): the SDK's own write again."""
    hooked = BoundedAttributes.__dict__.get("_setitem_locked")
    original = getattr(hooked, "_agent_identity_original", None)
    if original is not None:
        BoundedAttributes._setitem_locked = original  # type: ignore[method-assign]


def is_hooked() -> bool:
    """Whether :func:`install`'s hook is in place."""
    return getattr(BoundedAttributes.__dict__.get("_setitem_locked"), "_agent_identity_original", None) is not None


# -- the span's end (feature "ending", or its fallback) ------------------------------------------------


def before_end(span: Any, fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn(*args)`` once, just before ``span`` ends, while it still takes attributes: its ``end``
    is shadowed on this one span object (every caller, ``use_span`` and ``start_as_current_span``
    included, reaches it through attribute lookup; public API). ``fn``'s exceptions are logged."""
    original = span.end
    mine: list[Callable[..., None]] = []

    def end(end_time: int | None = None) -> None:
        # `mine` holds this function (not its own closure: no reference cycle keeping the span and
        # everything it references alive until the garbage collector runs), emptied at the first call
        if mine and span.__dict__.get("end") is mine.pop():
            del span.end  # once; the class's end (or an earlier shadow) from now on
        try:
            fn(*args)
        except Exception:
            _logger.debug("otel-agent-identity: a span's finisher failed", exc_info=True)
        original(end_time)

    mine.append(end)
    span.end = end


def finish(_processor: Any, span: Any) -> None:
    """A span ends (the SDK's ``_on_ending`` hook of our processor, or the ``ending`` fallback just
    before it): our ids that the attribute count limit evicted are put back (never one the
    application wrote itself), and a span whose conversation id is not the run's any more goes to
    the run's ``span_ending`` hook (see :class:`~otel_agent_identity.scope.IdentityScope`). Never
    raises."""
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
        if store.dropped and WRITES:
            _restore(store, kept)
        if (
            scope is not None
            and scope.span_ending is not None
            and store._dict.get(attrs.GEN_AI_CONVERSATION_ID) != scope.conversation_id
        ):
            scope.span_ending(span, scope)
    except Exception:
        _logger.debug("otel-agent-identity: could not finish an ending span", exc_info=True)


def _finish_public(span: Any, scope: Any) -> None:
    """:func:`finish` without the ``store``: the ``span_ending`` hook only."""
    if (span.attributes or {}).get(attrs.GEN_AI_CONVERSATION_ID) != scope.conversation_id:
        scope.span_ending(span, scope)


def _finish_later(span: Any) -> None:
    """The ``ending`` fallback: :func:`finish` just before ``span`` ends."""
    before_end(span, finish, None, span)


# -- the span's attribute store (feature "store", or its fallback) ----------------------------------


def _keep(span: Any, store: BoundedAttributes, values: dict, scope: Any = None) -> None:
    """Record ``values`` (ours, just written on ``store``) to put back at the span's end if the
    count limit evicts them, and the run's ``scope`` (a stamp) for its ``span_ending`` hook."""
    rec = getattr(store, _REC, None)
    if rec is None or type(rec) is frozenset:
        setattr(store, _REC, (values, scope))
        if not ENDING:
            _finish_later(span)
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


def _stamp(span: Any, store: BoundedAttributes, scope: Any) -> None:
    """Stamp a span that has attributes from its creation: our ids it already has, or had before
    a count limit evicted them, are the application's and stay as they are."""
    values = scope.attributes
    plain = store._dict
    if not plain.keys().isdisjoint(values):
        values = {k: v for k, v in values.items() if k not in plain}
    if store.dropped:
        theirs = getattr(store, _REC, None)
        if not WRITES:  # which of ours the creation's attributes evicted is unknown: none of ours
            values = {k: v for k, v in values.items() if k not in PROTECTED}
        elif type(theirs) is frozenset:
            values = {k: v for k, v in values.items() if k not in theirs}
    if values:
        _put(store, values)
    if not ENDING and (scope.span_ending is not None or store.maxlen is not None):
        _finish_later(span)
    if values is scope.attributes:
        setattr(store, _REC, scope)
    else:
        setattr(store, _REC, (values, scope))


def stamp(span: Any, scope: Any) -> None:
    """Stamp a span as it starts with the ids of the run's ``scope`` (its ``attributes``): an id
    the span has already (the application's, set at its creation) is kept. Never raises."""
    attributes = scope.attributes
    if not STORE:
        _stamp_public(span, scope)
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
                    store._agent_identity = scope  # type: ignore[attr-defined]
                    if not ENDING:
                        _finish_later(span)
                return
            _stamp(span, store, scope)
            return
    except Exception:
        _logger.debug("otel-agent-identity: could not stamp a span", exc_info=True)
        return
    set_trusted(span, attributes, scope)


def _stamp_public(span: Any, scope: Any) -> None:
    """:func:`stamp` without the ``store``: ``span.set_attributes`` of ours the span has not."""
    try:
        values, theirs = scope.attributes, span.attributes or {}
        if not theirs.keys().isdisjoint(values):
            values = {k: v for k, v in values.items() if k not in theirs}
        if values:
            span.set_attributes(values)
        if scope.span_ending is not None:
            before_end(span, _finish_public, span, scope)
    except Exception:
        _logger.debug("otel-agent-identity: could not stamp a span", exc_info=True)


def set_trusted(span: Any, values: dict, scope: Any = None) -> None:
    """Set attributes whose values are ours and already valid (checked id strings, bools) on a
    recording span: straight into the span's attribute store (the SDK's per-value validation is
    most of a ``set_attributes`` call; its limits are applied here, see :func:`_put`), else
    through the public API (not an SDK span, ended, or no ``store``). A value the span has is
    replaced (this is the adapter's decision, e.g. the run's id on its agent span); under a full
    count limit, the oldest attributes that are not ids make room. Our ids among ``values`` that
    the SDK evicts later are put back as the span ends (see :func:`_restore`); ``scope``: the run
    whose stamp this is (its ``span_ending`` hook then applies to the span)."""
    if not STORE:
        span.set_attributes(values)
        if scope is not None and scope.span_ending is not None:
            before_end(span, _finish_public, span, scope)
        return
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
    if store.maxlen is not None or scope is not None or getattr(store, _REC, None) is not None:
        _keep(span, store, values, scope)  # (a note of someone else's write: ours is the value now)


def set_ids(span: Any, values: dict) -> None:
    """``span.set_attributes(values)`` for ids that are not checked ones of ours (e.g. an A2A
    ``contextId`` as the server sent it): the SDK validates them; under a count limit, an evicted
    one is put back as the span ends, as by :func:`set_trusted`."""
    span.set_attributes(values)
    if not STORE:
        return
    store = getattr(span, "_attributes", None)
    if getattr(store, "maxlen", None) is not None and span._end_time is None:
        _keep(span, store, values)  # type: ignore[arg-type]  # after the write: the hook took it for someone else's


def replace_ending(span: Any, key: str, value: str | None) -> None:
    """On a span that is ending (a ``span_ending`` hook): set ``key`` to ``value`` (a checked id, cut
    to ``max_value_len`` as the SDK cuts str values; put back in place of another attribute when a
    count limit evicted the key), or remove it when ``value`` is None. In place: the span's store
    takes no API writes any more. Without the ``store``, through ``span.set_attribute`` (the
    ``ending`` fallback runs before the span ends): a value is set, none is removed."""
    if not STORE:
        if value is not None and span.is_recording():
            span.set_attribute(key, value)
        return
    store = span._attributes
    if value is None:
        store._dict.pop(key, None)
    elif key in store._dict:
        cut = store.max_value_len
        store._dict[key] = value if cut is None else value[:cut]
    else:
        _restore(store, {key: value})


def attributes_of(span: Any) -> Mapping[str, Any]:
    """A span's attributes as a read-only-by-convention mapping: the SDK's own store when there is
    one (``span.attributes`` builds a new view on every access), else ``span.attributes``."""
    plain = getattr(getattr(span, "_attributes", None), "_dict", None) if STORE else None
    return plain if plain is not None else (span.attributes or {})


def theirs(span: Any, key: str, ours: Any = None) -> bool:
    """Whether someone else (the application, a framework) wrote ``key``, one of :data:`PROTECTED`,
    on the open ``span`` since we last wrote it (the notes of :func:`install`; ``set_trusted``'s
    writes are ours), so its value is theirs: a run's end must not write ours over it, even when a
    count limit has evicted it since. False when nobody else wrote it. Without the notes (feature
    ``writes``), a value the span has that is not ``ours`` (the value we last wrote, or None) is theirs."""
    if WRITES:
        try:
            store = span._attributes
            rec = getattr(store, _REC, None)
            if rec is None:  # nobody else wrote one of our keys
                return False
            if type(rec) is frozenset:
                return key in rec
            values = rec[0] if type(rec) is tuple else rec.attributes
            # noted as theirs (kept so when a count limit evicted it), or there from before our record
            return values.get(key) is THEIRS or (key not in values and key in store._dict)
        except AttributeError:  # not an SDK span
            pass
    value = attributes_of(span).get(key)
    return value is not None and value != ours


def recorded(span: Any) -> bool:
    """Whether a record of ours is still on ``span``'s attribute store (tests: none after its end)."""
    return getattr(getattr(span, "_attributes", None), _REC, None) is not None
