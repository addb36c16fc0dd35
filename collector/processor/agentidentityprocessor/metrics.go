// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names. Through the collector's Prometheus telemetry endpoint
// they read agent_identity_hops_total and so on (docs/attributes.md).
// Labels are service and agent names, never conversation, execution or
// delegation ids (unbounded cardinality).
const (
	metricHops                = "agent_identity.hops"
	metricMismatches          = "agent_identity.mismatches"
	metricUnresolved          = "agent_identity.unresolved"
	metricDuplicateExecutions = "agent_identity.duplicate_executions"
	metricNoCallee            = "agent_identity.no_callee"
	metricDuplicateDeliveries = "agent_identity.duplicate_deliveries"
	metricLostResponses       = "agent_identity.lost_responses"

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
	hops, mismatches, unresolved, duplicates, noCallee, deliveries, lost metric.Int64Counter
	// opts: each label set's attribute option, built once (attrcache.go)
	opts attrCache
}

func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	m := mp.Meter(scopeName)
	var ins instruments
	var e1, e2, e3, e4, e5 error
	ins.hops, e1 = m.Int64Counter(metricHops, metric.WithUnit("{hop}"),
		metric.WithDescription("Cross-service hops checked, by result."))
	ins.mismatches, e2 = m.Int64Counter(metricMismatches, metric.WithUnit("{hop}"),
		metric.WithDescription("Flagged hops: the callee did not continue what the caller requested, by reason."))
	ins.unresolved, e3 = m.Int64Counter(metricUnresolved, metric.WithUnit("{span}"),
		metric.WithDescription("Spans whose parent is missing, ambiguous, cyclic or in another fragment."))
	ins.duplicates, e4 = m.Int64Counter(metricDuplicateExecutions, metric.WithUnit("{execution}"),
		metric.WithDescription("Extra callee executions under one delegation id in a trace."))
	ins.noCallee, e5 = m.Int64Counter(metricNoCallee, metric.WithUnit("{span}"),
		metric.WithDescription("Requesting spans (require_continuation caller conditions) with no descendant in another service."))
	var e6 error
	ins.deliveries, e6 = m.Int64Counter(metricDuplicateDeliveries, metric.WithUnit("{request}"),
		metric.WithDescription("Callee entry spans of a delegation the serving process had received before (a retry, executed again or not)."))
	var e7 error
	ins.lost, e7 = m.Int64Counter(metricLostResponses, metric.WithUnit("{hop}"),
		metric.WithDescription("Hops whose callee completed the request while the caller's send failed (timeout, reset)."))
	return &ins, errors.Join(e1, e2, e3, e4, e5, e6, e7)
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

// reset empties t, keeping its maps for the next call (scratch).
func (t *tally) reset() {
	clearCounts(t.hops)
	clearCounts(t.unresolved)
	clearCounts(t.duplicates)
	clearCounts(t.noCallee)
	clearCounts(t.deliveries)
	clearCounts(t.lostResponses)
}

func clearCounts[K comparable](m map[K]int64) {
	if len(m) > 0 {
		clear(m)
	}
}

func (ins *instruments) record(ctx context.Context, t *tally) {
	addCounts(ctx, ins.hops, &ins.opts, t.hops)
	if len(t.hops) > 0 {
		ins.recordMismatches(ctx, t.hops)
	}
	if len(t.unresolved) > 0 {
		ins.recordUnresolved(ctx, t.unresolved)
	}
	addCounts(ctx, ins.duplicates, &ins.opts, t.duplicates)
	addCounts(ctx, ins.deliveries, &ins.opts, t.deliveries)
	addCounts(ctx, ins.lost, &ins.opts, t.lostResponses)
	addCounts(ctx, ins.noCallee, &ins.opts, t.noCallee)
}

// recordMismatches adds the flagged hops of hops to agent_identity.mismatches.
func (ins *instruments) recordMismatches(ctx context.Context, hops map[hopKey]int64) {
	for k, n := range hops {
		if flagged, _ := verdict(k.result); flagged {
			ins.mismatches.Add(ctx, n, cachedOpts(&ins.opts, mismatchKey(k))...)
		}
	}
}

// recordUnresolved adds unresolved's counts by callee service.
func (ins *instruments) recordUnresolved(ctx context.Context, unresolved map[string]int64) {
	for svc, n := range unresolved {
		ins.unresolved.Add(ctx, n, cachedOpts(&ins.opts, unresolvedKey(svc))...)
	}
}

// addCounts adds each count of m to c with its label set's cached option. One
// small function per map keeps record's frame small (see groupByTrace).
func addCounts[K labelSet](ctx context.Context, c metric.Int64Counter, opts *attrCache, m map[K]int64) {
	for k, n := range m {
		c.Add(ctx, n, cachedOpts(opts, k)...)
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
