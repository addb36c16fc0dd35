"""The package's one use of the OpenTelemetry SDK's private API, kept because a benchmark shows it
matters (issue 34; docs/benchmarks.md): our checked values written straight into an open SDK
span's attribute store.

The SDK's public ``span.set_attribute`` cleans every value and takes two locks: ~10 K instructions
(0.1 bare SDK span) a key, ``set_attributes`` ~15 K more a call. A run stamps its two or three ids,
already checked (str within ``max_id_length``), on every span started inside it. :func:`write`
puts them into the span's ``BoundedAttributes`` (opentelemetry-api) where ``set_attributes`` would
(a key already there moves to the newest place), under the same two locks (none in ``on_start``),
only when the SDK would do nothing more: the span open, every value a bool or a str within the
store's value length limit, all of them within its count limit. Otherwise (an eviction, a cut
value, a value to clean) it writes nothing and the caller uses the public API.

Private names read: ``Span._lock``, ``Span._end_time``, ``Span._attributes`` and, on that
``BoundedAttributes``, ``_dict``, ``_lock``, ``_immutable``, ``maxlen``, ``max_value_len``. Detected
once, at the first write, on a probe span of a provider of our own; when one is missing, one
warning, and the public API from then on. ``OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API=false``
(read then) turns the feature off: ``make test-public-sdk`` runs the whole Python suite so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from otel_agent_identity.environment_variables import OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API

__all__ = ["enabled", "write"]

_logger = logging.getLogger(__name__)

#: None: not detected yet; False: off (the public API); else the SDK's ``BoundedAttributes`` class
_store: Any = None


def enabled() -> bool:
    """Whether :func:`write` writes (detects the feature at the first call)."""
    global _store
    if _store is None:
        _store = _detect()
    return _store is not False


def write(span: Any, values: Mapping[str, Any], starting: bool = False, store_class: Any = None) -> bool:
    """Set ``values`` (ours: str keys, str or bool values) on the open SDK ``span`` as
    ``span.set_attributes(values)`` would, when that would evict, cut or warn about nothing.
    ``starting``: the span is in its processors' ``on_start`` (not yet returned to anyone: no lock
    taken). ``store_class``: the probe's. Returns True when written; False when nothing was
    written (the caller then uses the public API). Never raises."""
    if store_class is None:
        if _store is None:
            enabled()
        store_class = _store
        if store_class is False:
            return False
    try:
        store: Any = getattr(span, "_attributes", None)  # a span not the SDK's (sampled out: non-recording)
        if type(store) is not store_class or span._end_time is not None or store._immutable:
            return False
        attributes, maxlen, limit = store._dict, store.maxlen, store.max_value_len
        for value in values.values():
            if type(value) is str:
                if limit is not None and len(value) > limit:
                    return False  # the SDK cuts it
            elif type(value) is not bool:
                return False  # the SDK cleans it
        if starting:
            if maxlen is not None and len(attributes) + len(values) > maxlen:
                return False  # an eviction: the SDK's own order and count
            for key, value in values.items():
                if key in attributes:
                    del attributes[key]  # the newest place, as the SDK
                attributes[key] = value
            return True
        with span._lock, store._lock:  # as set_attributes
            if span._end_time is not None or (maxlen is not None and len(attributes) + len(values) > maxlen):
                return False
            for key, value in values.items():
                if key in attributes:
                    del attributes[key]
                attributes[key] = value
        return True
    except Exception:
        _logger.debug("otel-agent-identity: could not write a span's attributes", exc_info=True)
        return False


def _detect() -> Any:
    """The SDK's ``BoundedAttributes`` class when the feature is on and the SDK has every private
    name :func:`write` reads (a probe span: what it writes, the SDK reads back, before and after
    the end), else False (one warning when the SDK lacks one). Never raises."""
    if os.environ.get(OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API, "").strip().lower() in ("false", "0", "no"):
        return False
    try:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.context import Context
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON

        provider = TracerProvider(
            sampler=ALWAYS_ON,
            resource=Resource.get_empty(),
            shutdown_on_exit=False,
            span_limits=SpanLimits(max_span_attributes=3, max_span_attribute_length=8),
        )
        span: Any = provider.get_tracer(__name__).start_span(
            "agent_identity.probe", context=Context(), attributes={"a": 1}
        )
        if not span.is_recording():  # OTEL_SDK_DISABLED: nothing to write, nothing to warn about
            return False
        store = getattr(span, "_attributes", None)
        found = (
            type(store) is BoundedAttributes
            and type(getattr(store, "_dict", None)) is dict
            and store.maxlen == 3
            and store.max_value_len == 8
            and store._immutable is False
            and hasattr(store, "_lock")
            and hasattr(span, "_lock")
            and getattr(span, "_end_time", 0) is None
        )
        if found:
            found = write(span, {"b": "x", "a": True}, store_class=BoundedAttributes) and dict(span.attributes) == {
                "b": "x",
                "a": True,
            }
            found = found and not write(span, {"c": "y", "d": "z"}, store_class=BoundedAttributes)
            found = found and not write(span, {"c": "123456789"}, store_class=BoundedAttributes)
            span.end()
            found = (
                found
                and not write(span, {"c": "y"}, store_class=BoundedAttributes)
                and span.attributes.get("c") is None
            )
        if found:
            return BoundedAttributes
    except Exception:
        _logger.debug("otel-agent-identity: probing the SDK failed", exc_info=True)
    _logger.warning(
        "otel-agent-identity: this opentelemetry-sdk lacks the private attribute store our fast writes "
        "use; using its public API (set_attributes)"
    )
    return False
