"""The backend overlays of collector-config/backends/ load in the real collector merged over the
single-node config, and keep every processor and exporter of its traces pipeline, in order (an
overlay's list replaces the base list, so a stale overlay would silently drop a component)."""

from __future__ import annotations

import re
import subprocess

import a2a_harness as h
import pytest
import yaml
from backend_support import COLLECTOR

pytestmark = [pytest.mark.collector]

OVERLAYS = sorted((h.ROOT / "collector-config" / "backends").glob("*.yaml"))


def _merged(*configs) -> dict:
    cmd = [COLLECTOR, "print-config", *[arg for c in configs for arg in ("--config", str(c))]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)["service"]["pipelines"]["traces"]


def test_there_are_overlays():
    assert {p.name for p in OVERLAYS} >= {"otlp-backend.yaml", "sessions.yaml"}


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: p.name)
def test_overlay_validates_over_single_node(overlay):
    out = subprocess.run(
        [COLLECTOR, "validate", "--config", str(h.COLLECTOR_CONFIG), "--config", str(overlay)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: p.name)
def test_overlay_keeps_the_single_node_pipeline(overlay):
    base, merged = _merged(h.COLLECTOR_CONFIG), _merged(h.COLLECTOR_CONFIG, overlay)
    for key in ("receivers", "processors", "exporters"):
        kept = [c for c in merged[key] if c in base[key]]
        assert kept == base[key], (key, merged[key])


def test_all_overlays_combine():
    pipeline = _merged(h.COLLECTOR_CONFIG, *OVERLAYS)
    assert "transform/sessions" in pipeline["processors"] and "otlp_grpc/backend" in pipeline["exporters"]


def _content(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_docs_show_the_overlays_as_they_are():
    blocks = re.findall(r"```yaml\n(.*?)```", (h.ROOT / "docs" / "backends.md").read_text(), re.S)
    files = {p.name: _content(p.read_text()) for p in OVERLAYS}
    assert blocks and all(_content(b) in files.values() for b in blocks), (
        "docs/backends.md and collector-config/backends/ differ"
    )


def test_the_readme_builder_snippet_uses_the_modules_this_distribution_is_built_from():
    readme = (h.ROOT / "README.md").read_text()
    snippet = re.search(r"```yaml\nprocessors:\n(.*?)```", readme, re.S).group(1)
    modules = re.findall(r"gomod: (\S+ \S+)", snippet)
    manifest = (h.ROOT / "collector" / "builder-config.yaml").read_text()
    assert modules and all(f"gomod: {m}" in manifest for m in modules)
