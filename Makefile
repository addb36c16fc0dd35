# Two entry points for a fresh machine: `make demo` and `make test`. Everything else is a step they call.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
COLLECTOR_BIN := collector/_build/otelcol-agentidentity
ZIPKIN_VERSION := 3.6.1
ZIPKIN_JAR := .cache/zipkin/zipkin-server-$(ZIPKIN_VERSION)-exec.jar

.PHONY: demo test lint venv venv-adk venv-strands venv-crewai test-python test-adk test-strands test-crewai test-go test-rules \
	bench system-deps collector clean zipkin test-dist screenshots test-peers test-peers-full test-peers-strands \
	test-public-sdk test-oldest test-newest test-a2a-crossversion

# Every venv (the project's, each framework's, the legs) is made by this one recipe: the venv in the
# target's folder, pip upgraded, then the target's PIP_ARGS and examples/ installed (editable: its
# offline models, shared by the examples, tests/ and benchmarks/, import without sys.path edits).
define venv
	$(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install -q --upgrade pip
	$(@D)/bin/python -m pip install -q $(PIP_ARGS) -e examples
	touch $@
endef

venv: $(VENV)/.installed
$(VENV)/.installed: PIP_ARGS = -e '.[all,test]'
$(VENV)/.installed: pyproject.toml examples/pyproject.toml
	$(venv)

# Google ADK pins opentelemetry-api/sdk <= 1.44 (the main venv has the newest): its own venv, its own tests.
VENV_ADK ?= .venv-adk
venv-adk: $(VENV_ADK)/.installed
$(VENV_ADK)/.installed: PIP_ARGS = -e '.[a2a,mcp,google-adk,test]'
$(VENV_ADK)/.installed: pyproject.toml examples/pyproject.toml
	$(venv)

# Strands Agents: its a2a extra pins a2a-sdk 0.3 and it pins mcp < 2.2 (the main venv has a2a-sdk 1.x and
# mcp 2.3+): its own venv, its own tests, which also run the a2a adapter's a2a-sdk 0.3 tests.
VENV_STRANDS ?= .venv-strands
STRANDS_TEST_DEPS := 'opentelemetry-distro>=0.60b0' 'pytest>=8' 'pytest-asyncio>=0.24' 'pytest-benchmark>=5' 'pyyaml>=6' 'requests>=2.31' \
	'opentelemetry-exporter-otlp-proto-http>=1.39' 'opentelemetry-instrumentation-threading>=0.60b0' \
	'moto>=5.1,<6'  # Strands' own suite (test-peers-strands) imports it
venv-strands: $(VENV_STRANDS)/.installed
$(VENV_STRANDS)/.installed: PIP_ARGS = -e '.[strands]' 'strands-agents[a2a]>=1.62,<2' $(STRANDS_TEST_DEPS)
$(VENV_STRANDS)/.installed: pyproject.toml examples/pyproject.toml
	$(venv)

# CrewAI pins pydantic < 2.13 and opentelemetry-sdk >= 1.45.1 (its a2a extra: a2a-sdk 0.3): its own venv,
# its own tests (about 3.5 min to install, +1.3 GB: lancedb, chromadb, onnxruntime...).
VENV_CREWAI ?= .venv-crewai
venv-crewai: $(VENV_CREWAI)/.installed
$(VENV_CREWAI)/.installed: PIP_ARGS = -e '.[crewai,test]' 'crewai[a2a]'
$(VENV_CREWAI)/.installed: pyproject.toml examples/pyproject.toml
	$(venv)

# Debian packages the tests need (promtool and prometheus for the alert-rule and scrape tests).
system-deps:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; }
	@command -v chromium >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# Zipkin (Apache-2.0), the trace backend of the demo and tests/backend: the exec jar from Maven
# Central, fetched once into .cache/ (Java 17 and Maven from apt when missing).
zipkin: $(ZIPKIN_JAR)
$(ZIPKIN_JAR):
	@command -v java >/dev/null && command -v mvn >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null; }
	mvn -q -C org.apache.maven.plugins:maven-dependency-plugin:2.8:copy \
	  -Dartifact=io.zipkin:zipkin-server:$(ZIPKIN_VERSION):jar:exec -DoutputDirectory=$(@D)

demo: venv collector zipkin
	$(PY) examples/demo.py

test: venv collector system-deps zipkin lint test-go test-rules test-public-sdk test-adk test-strands test-crewai test-dist \
	test-peers test-peers-strands test-polyglot test-oldest test-newest test-a2a-crossversion

# ruff (lint and format) and mypy, as configured in pyproject.toml: a violation fails make test (and CI)
LINTED := src tests benchmarks examples
lint: venv
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy

test-python: venv
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(PY) -m pytest --ignore=tests/google_adk --ignore=tests/strands_agents \
	  --ignore=tests/crewai --ignore=tests/polyglot

# The SDK's private API is read in one module only (src/otel_agent_identity/_sdk_private.py: detected at
# run time, the public API its fallback; tests/test_sdk_features.py checks it): the whole Python suite
# with it forced off, so that an SDK release without it breaks nothing. `make test` runs this one (not
# test-python: one whole run is ~20 min); the private write (the default) runs in the oldest and newest
# legs' unit-level suites and in every other venv's tests (ADK, Strands, CrewAI, polyglot, crossversion).
test-public-sdk: venv
	OTEL_INSTRUMENTATION_AGENT_IDENTITY_SDK_PRIVATE_API=false $(MAKE) test-python

# Oldest and newest legs (README, "Supported versions"), as contrib's per-version test requirements:
# each builds its own venv and runs the unit-level suite (no e2e subprocesses or servers, no
# collector). test-oldest pins every lower bound of pyproject.toml and, frozen from one resolve, every
# package beside them (tests/legs/oldest.txt: pip installs it without backtracking; about 4 min to
# install and 4 min to test on the shared 2-core machine, 8 min in all). One test is
# known to fail there and is deselected (LEG_OLDEST_KNOWN): semantic-conventions 0.61b0 lacks
# GEN_AI_WORKFLOW_NAME. test-newest takes the newest releases the registry serves (rebuilt when pyproject.toml
# changes).
LEGS := .cache/legs
LEG_OLDEST_KNOWN := --deselect tests/test_config_and_table.py::test_genai_names_are_the_semconv_packages
LEG_TESTS := tests --ignore=tests/google_adk --ignore=tests/strands_agents --ignore=tests/crewai --ignore=tests/polyglot \
	--ignore=tests/peers -m "not e2e and not collector" -q -p no:cacheprovider
$(LEGS)/oldest/.installed: PIP_ARGS = -e '.[all,test]' -c tests/legs/oldest.txt
$(LEGS)/oldest/.installed: pyproject.toml examples/pyproject.toml tests/legs/oldest.txt
	rm -rf $(@D)
	$(venv)
$(LEGS)/newest/.installed: PIP_ARGS = --upgrade --upgrade-strategy eager -e '.[all,test]'
$(LEGS)/newest/.installed: pyproject.toml examples/pyproject.toml
	rm -rf $(@D)
	$(venv)
test-oldest test-newest: test-%: $(LEGS)/%/.installed
	@$(LEGS)/$*/bin/python -m pip list 2>/dev/null | grep -E '^(opentelemetry-(api|sdk|instrumentation|semantic-conventions)|agent-framework-core|a2a-sdk|mcp|agno|langgraph|langchain-core|openai-agents|pydantic-ai-slim|llama-index-core|llama-index-workflows) '
	$(LEGS)/$*/bin/python -m pytest $(LEG_TESTS) $(if $(filter oldest,$*),$(LEG_OLDEST_KNOWN))

test-adk: venv-adk
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(VENV_ADK)/bin/python -m pytest tests/google_adk

test-strands: venv-strands
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(VENV_STRANDS)/bin/python -m pytest tests/strands_agents

test-crewai: venv-crewai
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(VENV_CREWAI)/bin/python -m pytest tests/crewai -p no:warnings

# Real A2A hops across Strands Agents and CrewAI, a2a-sdk 1.x and 0.3 (tests/a2a_crossversion, docs/a2a.md):
# callers and callees each in their own venv (.venv, .venv-strands, .venv-crewai), as subprocesses, judged by
# the real collector; about 2 min
test-a2a-crossversion: venv venv-strands venv-crewai collector
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) AGENT_IDENTITY_STRANDS_PYTHON=$(abspath $(VENV_STRANDS)/bin/python) \
	  AGENT_IDENTITY_CREWAI_PYTHON=$(abspath $(VENV_CREWAI)/bin/python) $(PY) -m pytest tests/a2a_crossversion -q

# The frameworks' own test suites (their source distributions, tests/peers/peers.py), run without and
# with the plugin: fails on a test that passes without it and fails with it. `test-peers` runs the
# bounded subset (OpenAI Agents runner/streaming/error tests, LangGraph's Pregel tests, MCP's
# dispatcher/transport/OTel tests; CrewAI's flow, conversation and streaming tests in .venv-crewai,
# about 3 min), `make test` includes it; `test-peers-full` runs the whole offline suites
# (docs/peers.md). Their test dependencies live in a venv of their own, pinned to the project venv's
# versions. Agent Framework, a2a-sdk and Agno ship no tests in their sdists (docs/peers.md).
PEERS_VENV := .cache/peers/venv
$(PEERS_VENV)/.installed: $(VENV)/.installed tests/peers/requirements.txt
	$(PYTHON) -m venv $(PEERS_VENV)
	$(VENV)/bin/pip freeze --exclude-editable > $(PEERS_VENV)/constraints.txt
	$(PEERS_VENV)/bin/pip install -q -e '.[all,test]' -r tests/peers/requirements.txt -c $(PEERS_VENV)/constraints.txt
	touch $@

test-peers: $(PEERS_VENV)/.installed venv-crewai
	$(PEERS_VENV)/bin/python tests/peers/peers.py
	$(VENV_CREWAI)/bin/python tests/peers/peers.py --only crewai

test-peers-full: $(PEERS_VENV)/.installed venv-crewai
	$(PEERS_VENV)/bin/python tests/peers/peers.py --full
	$(VENV_CREWAI)/bin/python tests/peers/peers.py --only crewai --full

# Strands Agents' own suite in .venv-strands (a2a-sdk 0.3 there): the subset, or FULL=1 for all of tests/strands
test-peers-strands: venv-strands
	$(VENV_STRANDS)/bin/python tests/peers/peers.py --only strands $(if $(FULL),--full)

# The wheel and sdist a release would upload, built in an isolated env and checked by twine.
test-dist: venv
	rm -rf dist && mkdir dist
	$(PY) -m build --outdir dist . >dist/build.log 2>&1 || { cat dist/build.log; exit 1; }
	$(PY) -m twine check --strict dist/*.whl dist/*.tar.gz

# Re-take the README's Zipkin screenshots (docs/zipkin-*.png) from the browser tests.
screenshots: venv collector zipkin system-deps
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) AGENT_IDENTITY_SCREENSHOTS=$(abspath docs) \
	  $(PY) -m pytest tests/backend -q -k browser

# Per-run and per-span cost: instructions (callgrind, load-independent) and thread CPU time, every
# variant interleaved in one process, as ratios to a bare SDK span (see docs/benchmarks.md).
bench: venv venv-adk venv-strands venv-crewai collector
	@command -v valgrind >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; }
	# OpenInference's LlamaIndex instrumentor, a peer measured beside ours on the LlamaIndex workload (its own
	# process; kept out of the venv, on PYTHONPATH for this run only)
	$(PY) -m pip install -q --upgrade --no-deps --target .cache/openinference-llama-index \
	  openinference-instrumentation-llama-index openinference-instrumentation openinference-semantic-conventions
	PYTHONPATH=$(CURDIR)/.cache/openinference-llama-index $(PY) benchmarks/instructions.py --control
	# Google ADK in its own venv, beside OpenInference's instrumentor for it (a peer, not a dependency:
	# kept out of the venv, where opentelemetry-instrument in test-adk would load it too)
	$(VENV_ADK)/bin/python -m pip install -q --upgrade --no-deps --target .cache/openinference-adk \
	  openinference-instrumentation-google-adk openinference-instrumentation openinference-semantic-conventions
	PYTHONPATH=$(CURDIR)/.cache/openinference-adk $(VENV_ADK)/bin/python benchmarks/instructions.py \
	  --only 'Google ADK' --control
	# Strands in its own venv, beside OpenInference's span processor for it (a peer, kept out of the venv too)
	$(VENV_STRANDS)/bin/python -m pip install -q --upgrade --no-deps --target .cache/openinference-strands \
	  openinference-instrumentation-strands-agents openinference-instrumentation openinference-semantic-conventions
	PYTHONPATH=$(CURDIR)/.cache/openinference-strands $(VENV_STRANDS)/bin/python benchmarks/instructions.py \
	  --only 'Strands' --control
	# CrewAI in its own venv, beside OpenInference's instrumentor for it (a peer: kept out of the venv too)
	$(VENV_CREWAI)/bin/python -m pip install -q --upgrade --no-deps --target .cache/openinference-crewai \
	  openinference-instrumentation-crewai openinference-instrumentation openinference-semantic-conventions
	PYTHONPATH=$(CURDIR)/.cache/openinference-crewai $(VENV_CREWAI)/bin/python benchmarks/instructions.py \
	  --only CrewAI --control
	$(PY) benchmarks/instructions.py --wall --rounds 15
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,ops --benchmark-sort=name
	cd collector/processor/agentidentityprocessor && go test -run '^$$' -bench . -benchmem

clean:
	rm -rf $(VENV) $(VENV_ADK) $(VENV_STRANDS) $(VENV_CREWAI) collector/_build

-include collector/collector.mk
include tests/polyglot/polyglot.mk
