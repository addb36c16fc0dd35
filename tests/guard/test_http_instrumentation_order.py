"""With OpenTelemetry's httpx and requests instrumentations injecting the propagation headers
themselves, the guard still strips identity, whichever instrumentor was installed first."""

from __future__ import annotations

import httpx
import pytest
import requests
from guard_helpers import assert_no_identity, parse_baggage

HTTPXClientInstrumentor = pytest.importorskip("opentelemetry.instrumentation.httpx").HTTPXClientInstrumentor
RequestsInstrumentor = pytest.importorskip("opentelemetry.instrumentation.requests").RequestsInstrumentor

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["guard-first", "guard-last"])
def both(request, guard, tracer_provider):
    others = [HTTPXClientInstrumentor(), RequestsInstrumentor()]
    if request.param == "guard-first":
        guard()
    for inst in others:
        inst.instrument(tracer_provider=tracer_provider)
    if request.param == "guard-last":
        guard()
    yield
    for inst in others:
        inst.uninstrument()


async def test_instrumentation_injected_baggage_is_filtered(servers, planted, both):
    url = servers["http_other"]
    async with httpx.AsyncClient() as client:
        received = [
            httpx.get(url).json()["headers"],
            (await client.get(url)).json()["headers"],
            requests.get(url, timeout=10).json()["headers"],
        ]
    for headers in received:
        assert headers["traceparent"]
        assert_no_identity(headers)
        assert parse_baggage(headers["baggage"]) == {"tenant": "acme"}
