import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
# spans are recorded but not exported: what is measured is the instrumentation, not an exporter
PROVIDER = TracerProvider()
trace.set_tracer_provider(PROVIDER)
