# Two entry points for a fresh machine: `make demo` and `make test`. Everything else is a step they call.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
COLLECTOR_BIN := collector/_build/otelcol-agentidentity

.PHONY: demo test venv test-python test-go test-rules bench system-deps collector clean

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,test]'
	touch $@

# Debian packages the tests need (promtool and prometheus for the alert-rule and scrape tests).
system-deps:
	@command -v promtool >/dev/null && command -v prometheus >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; }

demo: venv collector
	$(PY) examples/demo.py

test: venv collector system-deps test-go test-rules test-python

test-python: venv
	AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(PY) -m pytest

bench: venv collector
	$(PY) -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,mean,ops --benchmark-sort=name
	cd collector/processor/agentidentityprocessor && go test -run '^$$' -bench . -benchmem

clean:
	rm -rf $(VENV) collector/_build

-include collector/collector.mk
