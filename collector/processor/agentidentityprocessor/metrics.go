// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/metadata"
)

// The counters (names, units, descriptions, labels) are declared in
// metadata.yaml and built by the generated internal/metadata.TelemetryBuilder.
// Through the collector's Prometheus telemetry endpoint they read
// agent_identity_hops and so on (docs/attributes.md; attributes_test.go checks
// metadata.yaml against it). Labels are service and agent names, never
// conversation, execution or delegation ids (unbounded cardinality).
const (
	labelCallerService = "caller_service"
	labelCalleeService = "callee_service"
	labelCalleeAgent   = "callee_agent"
	labelResult        = "result"
	// labelReason: why a hop is flagged, context_changed or state_not_resumed
	// (the agent_identity.hop.result of the hop).
	labelReason       = "reason"
	labelCallerStatus = "caller_status"

	callerStatusError = "error"
	callerStatusOK    = "ok"
)

type instruments struct {
	tb *metadata.TelemetryBuilder
	// opts: each label set's attribute option, built once (attrcache.go)
	opts attrCache
}

func newInstruments(set component.TelemetrySettings) (*instruments, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &instruments{tb: tb}, nil
}

// hopKey is the label set of hops and mismatches.
type hopKey struct{ caller, callee, agent, result string }

// pairKey is the label set of duplicates, deliveries and lost responses
// (one attribute set per pair, shared by the three counters' cache entries).
type pairKey struct{ caller, callee string }

func (k pairKey) set() attribute.Set {
	return attribute.NewSet(
		attribute.String(labelCallerService, k.caller),
		attribute.String(labelCalleeService, k.callee))
}

// noCalleeKey is the label set of no_callee: the caller's service, the agent
// it addressed (gen_ai.agent.name of the requesting span) and whether that span
// ended with status ERROR.
type noCalleeKey struct{ caller, agent, status string }

// tally accumulates one processTraces call so each label set is added once.
type tally struct {
	hops       map[hopKey]int64
	unresolved map[string]int64
	duplicates map[pairKey]int64
	noCallee   map[noCalleeKey]int64
	deliveries map[pairKey]int64
	// lostResponses: hops marked agent_identity.hop.response_lost
	lostResponses map[pairKey]int64
}

// bump adds one to (*m)[k], making the map on first use.
func bump[K comparable](m *map[K]int64, k K) {
	if *m == nil {
		*m = make(map[K]int64)
	}
	(*m)[k]++
}

func (ins *instruments) record(ctx context.Context, t *tally) {
	for k, n := range t.hops {
		ins.tb.Hops.Add(ctx, n, ins.opts.get(k, func() attribute.Set {
			return attribute.NewSet(
				attribute.String(labelCallerService, k.caller),
				attribute.String(labelCalleeService, k.callee),
				attribute.String(labelCalleeAgent, k.agent),
				attribute.String(labelResult, k.result))
		}))
		if flagged, _ := verdict(k.result); flagged {
			ins.tb.Mismatches.Add(ctx, n, ins.opts.get(mismatchKey(k), func() attribute.Set {
				return attribute.NewSet(
					attribute.String(labelCallerService, k.caller),
					attribute.String(labelCalleeService, k.callee),
					attribute.String(labelCalleeAgent, k.agent),
					attribute.String(labelReason, k.result))
			}))
		}
	}
	for svc, n := range t.unresolved {
		ins.tb.Unresolved.Add(ctx, n, ins.opts.get(unresolvedKey(svc), func() attribute.Set {
			return attribute.NewSet(attribute.String(labelCalleeService, svc))
		}))
	}
	for k, n := range t.duplicates {
		ins.tb.DuplicateExecutions.Add(ctx, n, ins.opts.get(k, k.set))
	}
	for k, n := range t.deliveries {
		ins.tb.DuplicateDeliveries.Add(ctx, n, ins.opts.get(k, k.set))
	}
	for k, n := range t.lostResponses {
		ins.tb.LostResponses.Add(ctx, n, ins.opts.get(k, k.set))
	}
	for k, n := range t.noCallee {
		ins.tb.NoCallee.Add(ctx, n, ins.opts.get(k, func() attribute.Set {
			return attribute.NewSet(
				attribute.String(labelCallerService, k.caller),
				attribute.String(labelCalleeAgent, k.agent),
				attribute.String(labelCallerStatus, k.status))
		}))
	}
}
