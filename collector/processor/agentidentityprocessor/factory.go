// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor/internal/metadata"
)

// componentType is the processor's name in collector configuration.
var componentType = metadata.Type

// NewFactory returns the factory of the agentidentity processor (type and
// stability from metadata.yaml, internal/metadata).
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{RequireContinuation: defaultRules()}
}

func createTraces(
	ctx context.Context,
	set processor.Settings,
	cfg component.Config,
	next consumer.Traces,
) (processor.Traces, error) {
	p, err := newIdentityProcessor(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	mem := &cfg.(*Config).VerdictMemory
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(func(ctx context.Context, host component.Host) (err error) {
			p.memory, err = openMemory(ctx, host, set.ID, mem, p.ins.tb.DuplicateVerdicts, set.Logger)
			return err
		}),
		processorhelper.WithShutdown(func(ctx context.Context) error {
			p.ins.tb.Shutdown()
			return p.memory.close(ctx)
		}))
}
