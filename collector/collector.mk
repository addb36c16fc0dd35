# SPDX-License-Identifier: Apache-2.0
# Collector targets, included by the top Makefile (paths relative to the repo root).
#   collector           build collector/_build/otelcol-agentidentity (Go module proxy only)
#   collector-generate  regenerate collector/distribution from collector/builder-config.yaml
#   generate            regenerate each processor's generated code from its metadata.yaml (mdatagen)
#   check-generated     fail when a metadata.yaml and its generated files differ (regenerates
#                       into a temporary copy; the tree is left as it is)
#   test-go             check-generated, gofmt (our code; the builder's output is left as
#                       it writes it), vet, test with the race detector (unit, golden,
#                       generated component tests, fuzz seeds, goleak), then fuzz every Fuzz*
#                       target for FUZZTIME (bounded: make test runs it)
#   test-rules          promtool test rules on the alert-rule tests
#   bench-go            processor benchmark beside the groupbytrace baseline
#   test-reliability    the fault, load, application and security scenarios, printing their figures
#                       (docs/reliability.md); make test runs them too, quietly
GO ?= go
COLLECTOR_GOFLAGS ?= -trimpath -ldflags=-s\ -w
# One module (collector/processor), one package per component; each component's
# generated code comes from its metadata.yaml through mdatagen, pinned as a Go tool in
# collector/tools/go.mod (run with -modfile there, so the processor module's deps stay clean).
PROCESSOR_MODULE := collector/processor
PROCESSOR_DIR := $(PROCESSOR_MODULE)/agentidentityprocessor
COLLECTOR_SRC := $(wildcard collector/distribution/*.go collector/distribution/go.* \
	$(PROCESSOR_MODULE)/go.* $(PROCESSOR_MODULE)/*/*.go $(PROCESSOR_MODULE)/*/*/*.go \
	$(PROCESSOR_MODULE)/*/*/*/*.go)

.PHONY: collector collector-generate generate check-generated test-go test-rules bench-go fuzz-go \
	test-reliability

collector: $(COLLECTOR_BIN)

$(COLLECTOR_BIN): $(COLLECTOR_SRC)
	cd collector/distribution && $(GO) build $(COLLECTOR_GOFLAGS) -o ../_build/otelcol-agentidentity .

collector-generate:
	cd collector/tools && $(GO) tool builder --skip-compilation --config=../builder-config.yaml

# The //go:generate line of each component runs mdatagen on its metadata.yaml.
generate:
	cd $(PROCESSOR_MODULE) && $(GO) generate ./...

# Regenerates into a copy of the module (beside a copy of collector/tools) and compares
# the result with the tree: any generated_*.go, internal/metadata* or documentation.md
# that differs from what its metadata.yaml gives fails.
check-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && mkdir "$$tmp/collector" && \
	cp -r $(PROCESSOR_MODULE) collector/tools "$$tmp/collector/" && \
	(cd "$$tmp/collector/processor" && $(GO) generate ./...) && \
	diff -r $(PROCESSOR_MODULE) "$$tmp/collector/processor" || \
	  { echo "generated files are stale: run 'make generate' and commit them"; exit 1; }

FUZZTIME ?= 30s

test-go: check-generated
	@test -z "$$(gofmt -l $(PROCESSOR_MODULE))" || \
	  { gofmt -l $(PROCESSOR_MODULE); echo "gofmt: the files above are not formatted"; exit 1; }
	cd $(PROCESSOR_MODULE) && $(GO) vet ./... && $(GO) test -race -count=1 ./...
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
