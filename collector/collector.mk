# SPDX-License-Identifier: Apache-2.0
# Collector targets, included by the top Makefile (paths relative to the repo root).
#   collector           build collector/_build/otelcol-agentidentity (Go module proxy only)
#   collector-generate  regenerate collector/distribution from collector/builder-config.yaml
#   test-go             vet, test with the race detector (unit, golden, fuzz seeds, goleak),
#                       then fuzz every Fuzz* target for FUZZTIME (bounded: make test runs it)
#   test-rules          promtool test rules on the alert-rule tests
#   bench-go            processor benchmark beside the groupbytrace baseline
#   test-reliability    the fault, load, application and security scenarios, printing their figures
#                       (docs/reliability.md); make test runs them too, quietly
GO ?= go
COLLECTOR_GOFLAGS ?= -trimpath -ldflags=-s\ -w
PROCESSOR_DIR := collector/processor/agentidentityprocessor
COLLECTOR_SRC := $(wildcard collector/distribution/*.go collector/distribution/go.* \
	$(PROCESSOR_DIR)/*.go $(PROCESSOR_DIR)/*/*.go $(PROCESSOR_DIR)/go.*)

.PHONY: collector collector-generate test-go test-rules bench-go fuzz-go test-reliability

collector: $(COLLECTOR_BIN)

$(COLLECTOR_BIN): $(COLLECTOR_SRC)
	cd collector/distribution && $(GO) build $(COLLECTOR_GOFLAGS) -o ../_build/otelcol-agentidentity .

collector-generate:
	cd collector/tools && $(GO) tool builder --skip-compilation --config=../builder-config.yaml

FUZZTIME ?= 30s

test-go:
	cd $(PROCESSOR_DIR) && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	$(MAKE) --no-print-directory -f collector/collector.mk fuzz-go

# One bounded run per fuzz target (go test -fuzz takes one target at a time);
# -parallel 2 matches the 2-core CI machine. New inputs that fail land in testdata/fuzz.
fuzz-go:
	cd $(PROCESSOR_DIR) && for t in $$($(GO) test -list '^Fuzz' . | grep '^Fuzz'); do \
	  echo "fuzz $$t for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime=$(FUZZTIME) -parallel 2 . || exit 1; \
	done

bench-go:
	cd $(PROCESSOR_DIR) && $(GO) test -run '^$$' -bench . -benchmem -count=5

test-rules: system-deps
	promtool test rules collector-config/alerts/tests/*.yaml

test-reliability: venv collector system-deps
	AGENT_IDENTITY_RELIABILITY_FULL=1 AGENT_IDENTITY_COLLECTOR=$(abspath $(COLLECTOR_BIN)) $(PY) -m pytest -s -q tests/collector/test_reliability_*.py
