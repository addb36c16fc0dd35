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
// arrives after wait_duration leaves as a second fragment; nothing in either
// fragment is a mismatch, the late span is unresolved.
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
	require.Eventually(t, func() bool { return len(h.sink.AllTraces()) == 1 }, 5*time.Second, 10*time.Millisecond)
	// Late: the callee's agent and chat spans.
	require.NoError(t, gbt.ConsumeTraces(context.Background(), buildTraces(t, spans[3:])))
	require.Eventually(t, func() bool { return len(h.sink.AllTraces()) == 2 }, 5*time.Second, 10*time.Millisecond)

	first, late := h.sink.AllTraces()[0], h.sink.AllTraces()[1]
	assert.Equal(t, 3, first.SpanCount())
	assert.Equal(t, map[string]int{resultCalleeUnknown: 1}, countResults(first))
	assert.Equal(t, 2, late.SpanCount())
	assert.Equal(t, map[string]int{resultUnresolved: 1}, countResults(late))
	m := h.metrics(t)
	assert.Equal(t, int64(1), m["agent_identity.unresolved{callee_service=specialist}"])
	for k := range m {
		assert.NotContains(t, k, "mismatches", "no mismatch from fragments")
	}
}
