// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A callee that runs ASGI/Starlette server tracing beside ours has two SERVER
// spans a request: Starlette's `POST /` (the entry span) over our A2A SERVER
// span. A duplicate execution is marked agent_identity.delegation.duplicate
// once and counted once, whichever side found it: the serving process (on our
// A2A SERVER span), or the processor (on the entry span, where the verdict
// is), within one trace or across traces (a retry from a new caller process,
// whichever trace is judged first).
func TestDuplicateUnderASGIMarkedAndCountedOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		order []int // the fragments (traces), in the order they are judged
		want  []string
	}{
		// run2: the callee marked its retry; run3: it did not (its memory
		// forgot, or no allowlist: another key), the processor's memory did
		{"duplicate_asgi_across_traces", []int{0, 1, 2}, []string{"r2_a2a", "r3_http"}},
		// the retry's trace judged before the first one's (released first)
		{"duplicate_asgi_across_traces", []int{1, 0, 2}, []string{"r2_a2a", "r3_http"}},
		// del-served: the callee marked the second execution; del-unmarked:
		// the processor did
		{"duplicate_asgi_within_trace", []int{0}, []string{"b_a2a2", "d_http2"}},
	} {
		name, want := c.name, c.want
		t.Run(fmt.Sprint(name, c.order), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "golden", name, "input.json"))
			require.NoError(t, err)
			var in goldenInput
			require.NoError(t, json.Unmarshal(raw, &in))
			h := newHarness(t, configFrom(t, in.Config))
			for _, k := range c.order {
				require.NoError(t, h.proc.ConsumeTraces(context.Background(), buildTraces(t, in.Fragments[k])))
			}
			require.NoError(t, h.proc.Shutdown(context.Background()))
			var marked []string
			for _, td := range h.sink.AllTraces() {
				for _, rs := range td.ResourceSpans().All() {
					for _, ss := range rs.ScopeSpans().All() {
						for _, s := range ss.Spans().All() {
							if dup, _ := boolAttr(s, attrDelegationDuplicate); dup {
								marked = append(marked, s.Name())
							}
						}
					}
				}
			}
			assert.ElementsMatch(t, want, marked, "one mark per duplicate execution")
			assert.Equal(t, int64(len(want)),
				h.metrics(t)["agent_identity.duplicate_executions{callee_service=specialist,caller_service=orchestrator}"],
				"one count per duplicate execution")
		})
	}
}
