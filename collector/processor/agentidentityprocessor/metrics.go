// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

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
	// labelStore: the bounded memory an eviction came from.
	labelStore = "store"

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
	hops       counts[hopKey]
	unresolved counts[string]
	duplicates counts[pairKey]
	noCallee   counts[noCalleeKey]
	deliveries counts[pairKey]
	// lostResponses: hops marked agent_identity.hop.response_lost
	lostResponses counts[pairKey]
	// evictions: items a bounded memory gave up, by store
	evictions counts[string]
}

// counts is a tally of label sets, a short slice searched in order: a call
// after groupbytrace is one trace, with a label set or two per counter, and
// the search costs less than hashing the keys' strings into a map and
// iterating it (the number of distinct sets is the metric's cardinality,
// bounded by services, agents and results).
type counts[K comparable] []labelCount[K]

type labelCount[K comparable] struct {
	key K
	n   int64
}

// bump adds one to k's count.
func bump[K comparable](c *counts[K], k K) { c.add(k, 1) }

func (c *counts[K]) add(k K, n int64) {
	for i := range *c {
		if (*c)[i].key == k {
			(*c)[i].n += n
			return
		}
	}
	*c = append(*c, labelCount[K]{key: k, n: n})
}

// reset empties t, keeping its slices for the next call (scratch).
func (t *tally) reset() {
	t.hops = t.hops[:0]
	t.unresolved = t.unresolved[:0]
	t.duplicates = t.duplicates[:0]
	t.noCallee = t.noCallee[:0]
	t.deliveries = t.deliveries[:0]
	t.lostResponses = t.lostResponses[:0]
	t.evictions = t.evictions[:0]
}

func (ins *instruments) record(ctx context.Context, t *tally) {
	addCounts(ctx, ins.tb.Hops, &ins.opts, t.hops)
	if len(t.hops) > 0 {
		ins.recordMismatches(ctx, t.hops)
	}
	if len(t.unresolved) > 0 {
		ins.recordUnresolved(ctx, t.unresolved)
	}
	addCounts(ctx, ins.tb.DuplicateExecutions, &ins.opts, t.duplicates)
	addCounts(ctx, ins.tb.DuplicateDeliveries, &ins.opts, t.deliveries)
	addCounts(ctx, ins.tb.LostResponses, &ins.opts, t.lostResponses)
	addCounts(ctx, ins.tb.NoCallee, &ins.opts, t.noCallee)
	for _, c := range t.evictions {
		ins.evicted(ctx, c.key, c.n)
	}
}

// evicted adds n to agent_identity.evictions of store.
func (ins *instruments) evicted(ctx context.Context, store string, n int64) {
	ins.tb.Evictions.Add(ctx, n, cachedOpts(&ins.opts, evictionKey(store))...)
}

// evictionKey is a store counted in agent_identity.evictions.
type evictionKey string

func (k evictionKey) set() attribute.Set {
	return attribute.NewSet(attribute.String(labelStore, string(k)))
}

// recordMismatches adds the flagged hops of hops to agent_identity.mismatches.
func (ins *instruments) recordMismatches(ctx context.Context, hops counts[hopKey]) {
	for _, c := range hops {
		if flagged, _ := verdict(c.key.result); flagged {
			ins.tb.Mismatches.Add(ctx, c.n, cachedOpts(&ins.opts, mismatchKey(c.key))...)
		}
	}
}

// recordUnresolved adds unresolved's counts by callee service.
func (ins *instruments) recordUnresolved(ctx context.Context, unresolved counts[string]) {
	for _, c := range unresolved {
		ins.tb.Unresolved.Add(ctx, c.n, cachedOpts(&ins.opts, unresolvedKey(c.key))...)
	}
}

// addCounts adds each count of m to c with its label set's cached option. One
// small function per tally keeps record's frame small (see groupByTrace).
func addCounts[K labelSet](ctx context.Context, c metric.Int64Counter, opts *attrCache, m counts[K]) {
	for _, k := range m {
		c.Add(ctx, k.n, cachedOpts(opts, k.key)...)
	}
}

func (k hopKey) set() attribute.Set {
	return attribute.NewSet(
		attribute.String(labelCallerService, k.caller),
		attribute.String(labelCalleeService, k.callee),
		attribute.String(labelCalleeAgent, k.agent),
		attribute.String(labelResult, k.result))
}

func (k mismatchKey) set() attribute.Set {
	return attribute.NewSet(
		attribute.String(labelCallerService, k.caller),
		attribute.String(labelCalleeService, k.callee),
		attribute.String(labelCalleeAgent, k.agent),
		attribute.String(labelReason, k.result))
}

func (k unresolvedKey) set() attribute.Set {
	return attribute.NewSet(attribute.String(labelCalleeService, string(k)))
}

func (k noCalleeKey) set() attribute.Set {
	return attribute.NewSet(
		attribute.String(labelCallerService, k.caller),
		attribute.String(labelCalleeAgent, k.agent),
		attribute.String(labelCallerStatus, k.status))
}
