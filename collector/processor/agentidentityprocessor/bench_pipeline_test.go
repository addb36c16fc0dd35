// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/collector/processor/processortest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// agentShapedTrace is one trace of tests/collector/loadgen.py, as groupbytrace
// releases it: orchestrator (invoke_agent INTERNAL, A2A CLIENT send) and
// specialist (SERVER, invoke_agent, chat), 5 spans, every hop continued.
func agentShapedTrace(n int64) ptrace.Traces {
	tb := &traceBuilder{td: ptrace.NewTraces()}
	orch, spec := tb.scope("orchestrator"), tb.scope("specialist")
	root := tb.add(orch, pcommon.SpanID{}, ptrace.SpanKindInternal, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "orchestrator",
		attrConversationID: "conv-1234abcd-17", attrExecutionID: "0123456789abcdef0123456789abcdef"})
	send := tb.add(orch, root, ptrace.SpanKindClient, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "specialist", attrConversationID: "conv-1234abcd-17",
		attrRequestedID: "conv-1234abcd-17", attrExecutionID: "0123456789abcdef0123456789abcdef",
		attrDelegationID: "fedcba9876543210fedcba9876543210"})
	server := tb.add(spec, send, ptrace.SpanKindServer, nil)
	agent := tb.add(spec, server, ptrace.SpanKindInternal, map[string]any{
		attrOperationName: operationInvokeAgent, attrAgentName: "specialist",
		attrConversationID: "conv-1234abcd-17", attrExecutionID: "abcdef0123456789abcdef0123456789"})
	tb.add(spec, agent, ptrace.SpanKindClient, map[string]any{attrOperationName: "chat"})
	setTraceID(tb.td, n)
	return tb.td
}

// BenchmarkPipelineShare is the collector's work per agent-shaped trace, with
// and without the judging: decode the OTLP request (protobuf), hand it to a new
// goroutine as groupbytrace releases each trace, which runs agentidentity built
// by the factory (processorhelper, backfill on, its counters on a real SDK
// meter; with_memory: and its verdict memory on a real file_storage, as in
// tier2-identity.yaml), then encode it for the file exporter (OTLP JSON).
// groupbytrace, the receiver's HTTP and the batch processor come on top in the
// collector, so the with/without ratio here bounds the share from above;
// test_reliability_load.py measures the real pipelines. passthrough is the
// floor: processorhelper around a function that returns the trace as it is
// (what any processor in agentidentity's place costs). Allocations per trace
// are reported per iteration (one trace).
func BenchmarkPipelineShare(b *testing.B) {
	req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(agentShapedTrace(1))
	require.NoError(b, err)
	for _, variant := range []string{"without", "passthrough", "with", "with_memory"} {
		b.Run(variant, func(b *testing.B) {
			ctx := context.Background()
			var cons consumer.Traces = consumertest.NewNop()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer func() { _ = mp.Shutdown(ctx) }()
			set := processortest.NewNopSettings(componentType)
			set.MeterProvider = mp
			switch variant {
			case "passthrough":
				p, err := processorhelper.NewTraces(ctx, set, createDefaultConfig(), consumertest.NewNop(),
					func(_ context.Context, td ptrace.Traces) (ptrace.Traces, error) { return td, nil })
				require.NoError(b, err)
				cons = p
			case "with", "with_memory":
				cfg := createDefaultConfig().(*Config)
				cfg.Backfill = true
				host := component.Host(componenttest.NewNopHost())
				if variant == "with_memory" {
					id, ext := startFileStorage(b, b.TempDir())
					defer func() { require.NoError(b, ext.Shutdown(ctx)) }()
					cfg.Storage = &id
					host = storageHost{exts: map[component.ID]component.Component{id: ext}}
				}
				p, err := NewFactory().CreateTraces(ctx, set, cfg, consumertest.NewNop())
				require.NoError(b, err)
				require.NoError(b, p.Start(ctx, host))
				defer func() { require.NoError(b, p.Shutdown(ctx)) }()
				cons = p
			}
			un, js := &ptrace.ProtoUnmarshaler{}, &ptrace.JSONMarshaler{}
			done := make(chan struct{})
			n := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				td, err := un.UnmarshalTraces(req)
				if err != nil {
					b.Fatal(err)
				}
				n++
				setTraceID(td, n) // a new trace: the verdict memory has not seen it
				go func() {
					_ = cons.ConsumeTraces(ctx, td)
					done <- struct{}{}
				}()
				<-done
				if _, err := js.MarshalTraces(td); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
