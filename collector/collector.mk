# SPDX-License-Identifier: Apache-2.0
# Collector targets, included by the top Makefile (paths relative to the repo root).
#   collector           build collector/_build/otelcol-agentidentity (Go module proxy only)
#   collector-generate  regenerate collector/distribution from collector/builder-config.yaml
#   test-go             vet and test the processor (unit, golden, fuzz seeds, goleak)
#   test-rules          promtool test rules on the alert-rule tests
#   bench-go            processor benchmark beside the groupbytrace baseline
GO ?= go
COLLECTOR_GOFLAGS ?= -trimpath -ldflags=-s\ -w
PROCESSOR_DIR := collector/processor/agentidentityprocessor
COLLECTOR_SRC := $(wildcard collector/distribution/*.go collector/distribution/go.* \
	$(PROCESSOR_DIR)/*.go $(PROCESSOR_DIR)/go.*)

.PHONY: collector collector-generate test-go test-rules bench-go fuzz-go

collector: $(COLLECTOR_BIN)

$(COLLECTOR_BIN): $(COLLECTOR_SRC)
	cd collector/distribution && $(GO) build $(COLLECTOR_GOFLAGS) -o ../_build/otelcol-agentidentity .

collector-generate:
	cd collector/tools && $(GO) tool builder --skip-compilation --config=../builder-config.yaml

test-go:
	cd $(PROCESSOR_DIR) && $(GO) vet ./... && $(GO) test -count=1 ./...

fuzz-go:
	cd $(PROCESSOR_DIR) && $(GO) test -run '^$$' -fuzz FuzzTraceWalk -fuzztime=30s

bench-go:
	cd $(PROCESSOR_DIR) && $(GO) test -run '^$$' -bench . -benchmem -count=5

test-rules: system-deps
	promtool test rules collector-config/alerts/tests/*.yaml
