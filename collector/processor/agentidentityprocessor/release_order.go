// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"cmp"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/join"
)

// inStartOrder orders traces released together by their earliest span start,
// so that turn 1 of a conversation is judged (and its context remembered,
// crosstrace.go) before turn 2 when both complete in one batch: else turn 2
// looks like the first request in its context (first_turn, a miss) unless its
// caller says agent_identity.conversation.answered_before.
func inStartOrder(rel []join.Released) {
	if len(rel) < 2 {
		return
	}
	type held struct {
		start pcommon.Timestamp
		r     join.Released
	}
	order := make([]held, len(rel))
	for i := range rel {
		order[i] = held{earliestStart(&rel[i]), rel[i]}
	}
	slices.SortStableFunc(order, func(a, b held) int { return cmp.Compare(a.start, b.start) })
	for i := range order {
		rel[i] = order[i].r
	}
}

func earliestStart(r *join.Released) pcommon.Timestamp {
	var first pcommon.Timestamp
	for _, rs := range r.Traces.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if t := s.StartTimestamp(); first == 0 || (t != 0 && t < first) {
					first = t
				}
			}
		}
	}
	return first
}
