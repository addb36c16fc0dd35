// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// spanIn is one span of a hand-built test trace (testdata/golden/*/input.json).
type spanIn struct {
	Trace   string         `json:"trace,omitempty"`   // trace name, default "t1"
	ID      string         `json:"id"`                // span name and id seed
	Parent  string         `json:"parent,omitempty"`  // parent id seed, "" = root
	Service any            `json:"service,omitempty"` // resource service.name, any type
	Kind    string         `json:"kind,omitempty"`    // client, server, internal, ...
	Start   int64          `json:"start,omitempty"`   // start time, default: position
	Status  string         `json:"status,omitempty"`  // "error" sets status ERROR
	Attrs   map[string]any `json:"attrs,omitempty"`
	Scope   string         `json:"scope,omitempty"` // instrumentation scope name
}

func spanID(seed string) pcommon.SpanID {
	h := fnv.New64a()
	_, _ = h.Write([]byte(seed))
	var id pcommon.SpanID
	copy(id[:], h.Sum(nil))
	return id
}

func traceID(seed string) pcommon.TraceID {
	var id pcommon.TraceID
	if seed == "zero" {
		return id
	}
	if seed == "" {
		seed = "t1"
	}
	copy(id[:], seed)
	id[15] = 1
	return id
}

// buildTraces makes one ptrace.Traces with one ResourceSpans a span.
func buildTraces(t testing.TB, spans []spanIn) ptrace.Traces {
	td := ptrace.NewTraces()
	for i, in := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		if in.Service != nil {
			require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{"service.name": in.Service}))
		}
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(in.Scope)
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(traceID(in.Trace))
		s.SetSpanID(spanID(in.ID))
		if in.Parent != "" {
			s.SetParentSpanID(spanID(in.Parent))
		}
		s.SetName(in.ID)
		if k, ok := spanKinds[in.Kind]; ok {
			s.SetKind(k)
		}
		if in.Status == "error" {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
		start := in.Start
		if start == 0 {
			start = int64(i + 1)
		}
		s.SetStartTimestamp(pcommon.Timestamp(start * 1e9))
		s.SetEndTimestamp(pcommon.Timestamp(start*1e9 + 5e8))
		if in.Attrs != nil {
			require.NoError(t, s.Attributes().FromRaw(in.Attrs))
		}
	}
	return td
}

// harness runs the processor built by the factory with a readable meter.
type harness struct {
	proc   processor.Traces
	sink   *consumertest.TracesSink
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func newHarness(t testing.TB, cfg *Config) *harness {
	h := &harness{sink: new(consumertest.TracesSink), reader: sdkmetric.NewManualReader()}
	h.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	set := processortest.NewNopSettings(componentType)
	set.MeterProvider = h.mp
	p, err := NewFactory().CreateTraces(context.Background(), set, cfg, h.sink)
	require.NoError(t, err)
	h.proc = p
	t.Cleanup(func() {
		require.NoError(t, p.Shutdown(context.Background()))
		require.NoError(t, h.mp.Shutdown(context.Background()))
	})
	return h
}

// metrics returns "name{label=value,...}" -> sum of every counter.
func (h *harness) metrics(t testing.TB) map[string]int64 {
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				var labels []string
				for _, kv := range dp.Attributes.ToSlice() {
					labels = append(labels, fmt.Sprintf("%s=%s", kv.Key, kv.Value.Emit()))
				}
				sort.Strings(labels)
				out[m.Name+"{"+strings.Join(labels, ",")+"}"] += dp.Value
			}
		}
	}
	return out
}

// configFrom unmarshals a raw config (as in collector YAML) over the defaults.
func configFrom(t testing.TB, raw map[string]any) *Config {
	cfg := createDefaultConfig().(*Config)
	if raw != nil {
		require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	}
	require.NoError(t, cfg.Validate())
	return cfg
}

func confmapUnmarshal(raw map[string]any, cfg any) error {
	return confmap.NewFromStringMap(raw).Unmarshal(cfg)
}
