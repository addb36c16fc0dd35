// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdsCutByAttributeLengthLimits: the processor compares ids as the spans
// carry them. An SDK attribute value length limit
// (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT) shorter than an id cuts it; a
// caller and a callee that cut at different lengths report one context as two
// (a false context_changed), and two that cut the same cannot tell apart ids
// that share the kept prefix (a change missed). README "Limits" states both;
// the Python side warns at start-up when the limit is below max_id_length.
func TestIdsCutByAttributeLengthLimits(t *testing.T) {
	long := "ctx-" + strings.Repeat("a", 60)
	other := "ctx-" + strings.Repeat("a", 59) + "b" // the same first 63 characters
	cut := func(s string, n int) string { return s[:min(n, len(s))] }
	cases := []struct {
		name                 string
		requested, answered  string
		callerCut, calleeCut int
		want                 string
	}{
		{"uncut: continued", long, long, 256, 256, resultContinued},
		{"cut alike: continued", long, long, 32, 32, resultContinued},
		{"cut differently: a false context_changed", long, long, 32, 48, resultContextChanged},
		{"another id, cut alike within the shared prefix: missed", long, other, 32, 32, resultContinued},
		{"another id, uncut: context_changed", long, other, 256, 256, resultContextChanged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, ans := cut(c.requested, c.callerCut), cut(c.answered, c.calleeCut)
			td := buildTraces(t, []spanIn{
				{ID: "send", Service: "orchestrator", Kind: "client", Attrs: map[string]any{
					attrOperationName: operationInvokeAgent, attrConversationID: req,
					attrRequestedID: req, attrDelegationID: "d1", attrAnsweredBefore: true}},
				{ID: "entry", Parent: "send", Service: "specialist", Kind: "server", Attrs: map[string]any{
					attrConversationID: ans, attrRequestedID: ans, attrResumed: true}},
			})
			h := newHarness(t, configFrom(t, map[string]any{"hop_window": "0s"}))
			require.NoError(t, h.proc.ConsumeTraces(context.Background(), td))
			assert.Equal(t, map[string]int{c.want: 1}, countResults(h.sink.AllTraces()[0]))
		})
	}
}
