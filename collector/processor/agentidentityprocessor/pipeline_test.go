// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/groupbytraceprocessor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/processor/processortest"
)

// groupbytrace -> agentidentity as in the configs: a callee whose agent span
// arrives after wait_duration leaves groupbytrace as a second fragment; the
// join holds the first (the required hop has no agent span yet) and judges
// the trace once, whole, when the late fragment arrives: the mismatch is
// found and nothing is unresolved.
func TestBehindGroupByTrace(t *testing.T) {
	spans, err := readGolden("mismatching_hop")
	require.NoError(t, err)
	h := newHarness(t, createDefaultConfig().(*Config))

	f := groupbytraceprocessor.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmapUnmarshal(map[string]any{"wait_duration": 100 * time.Millisecond}, cfg))
	gbt, err := f.CreateTraces(context.Background(),
		processortest.NewNopSettings(component.MustNewType("groupbytrace")), cfg, h.proc)
	require.NoError(t, err)
	require.NoError(t, gbt.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, gbt.Shutdown(context.Background())) }()

	// In time: caller spans and the callee's server span, in two batches.
	require.NoError(t, gbt.ConsumeTraces(context.Background(), buildTraces(t, spans[:2])))
	require.NoError(t, gbt.ConsumeTraces(context.Background(), buildTraces(t, spans[2:3])))
	// groupbytrace released them (held by the join, nothing out yet)
	require.Eventually(t, func() bool {
		m := h.metrics(t)
		return m["otelcol_processor_incoming_items{otel.signal=traces,processor=agentidentity}"] == 3
	}, 5*time.Second, 10*time.Millisecond)
	assert.Empty(t, h.sink.AllTraces())
	// Late: the callee's agent and chat spans.
	require.NoError(t, gbt.ConsumeTraces(context.Background(), buildTraces(t, spans[3:])))
	require.Eventually(t, func() bool { return len(h.sink.AllTraces()) == 1 }, 5*time.Second, 10*time.Millisecond)

	whole := h.sink.AllTraces()[0]
	assert.Equal(t, 5, whole.SpanCount())
	assert.Equal(t, map[string]int{resultContextChanged: 1}, countResults(whole))
	m := h.metrics(t)
	assert.Equal(t, int64(1), m["agent_identity.mismatches{callee_agent=specialist,callee_service=specialist,caller_service=orchestrator,reason=context_changed}"])
	for k := range m {
		assert.NotContains(t, k, "unresolved", "a late fragment is joined, not unresolved")
	}
}
