// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"context"
	"errors"

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
	return &Config{RequireContinuation: defaultRules(), Join: defaultJoin()}
}

func createTraces(
	ctx context.Context,
	set processor.Settings,
	cfg component.Config,
	next consumer.Traces,
) (processor.Traces, error) {
	c := cfg.(*Config)
	p, err := newIdentityProcessor(set, c)
	if err != nil {
		return nil, err
	}
	p.joiner = newJoiner(p, &c.Join, next, set.Logger)
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(func(ctx context.Context, host component.Host) error {
			if c.Storage != nil {
				if err := p.openMemories(ctx, host, set.ID, *c.Storage, &c.Join, set.Logger); err != nil {
					return err
				}
			}
			var err error
			if p.memory, err = openMemory(ctx, host, set.ID, &c.VerdictMemory, p.ins.tb.DuplicateVerdicts, set.Logger); err != nil {
				return err
			}
			p.joiner.start(p)
			return nil
		}),
		processorhelper.WithShutdown(func(ctx context.Context) error {
			// Every held trace leaves, judged, before the memories close.
			p.joiner.shutdown(p)
			p.ins.tb.Shutdown()
			return errors.Join(p.memory.close(ctx), p.mem.close(ctx))
		}))
}
