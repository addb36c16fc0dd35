# SPDX-License-Identifier: Apache-2.0
"""Every shipped collector config loads in the built distribution (``otelcol validate``)."""

from __future__ import annotations

import os
import subprocess

import collector_support as cs
import pytest

pytestmark = [
    pytest.mark.collector,
]

CONFIGS = sorted(cs.CONFIGS.glob("*.yaml"))


def test_there_are_configs():
    assert {p.name for p in CONFIGS} >= {"single-node.yaml", "tier1-loadbalancer.yaml", "tier2-identity.yaml"}


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_config_validates(config):
    env = dict(os.environ, TIER2_ENDPOINTS="[127.0.0.1:5317, 127.0.0.1:5417]")
    out = subprocess.run(
        [cs.COLLECTOR, "validate", "--config", str(config)], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_components_include_the_required_set():
    out = subprocess.run([cs.COLLECTOR, "components"], capture_output=True, text=True, timeout=60, check=True)
    names = set(out.stdout.split())
    for name in (
        "otlp",
        "memory_limiter",
        "batch",
        "groupbytrace",
        "transform",
        "filter",
        "agentidentity",
        "count",
        "otlp_grpc",
        "otlp_http",
        "debug",
        "file",
        "load_balancing",
    ):
        assert name in names, name
