// SPDX-License-Identifier: Apache-2.0

// Package drainprocessor provides the `drain` processor: it passes traces
// through unchanged and, at shutdown, waits `delay` before returning.
//
// The collector shuts a pipeline down upstream first, one component at a
// time: receivers stop accepting, then each processor's Shutdown runs before
// the next one's. groupbytrace discards, at its Shutdown, every trace it still
// holds (it releases a trace only wait_duration after its first span). Placed
// right before groupbytrace, drain holds the shutdown there for `delay`, while
// groupbytrace and everything after it still run: every held trace is released,
// judged and exported, then groupbytrace shuts down empty. Set `delay` to
// groupbytrace's wait_duration plus a second. A SIGKILL skips all of this.
package drainprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/drainprocessor"

//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.uber.org/zap"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/drainprocessor/internal/metadata"
)

// Config of the drain processor.
type Config struct {
	// Delay is how long Shutdown waits (a Go duration, e.g. "6s"); 0 disables
	// the wait. Shutdown returns earlier when the collector's shutdown context
	// ends.
	Delay time.Duration `mapstructure:"delay"`
}

// Validate rejects a negative delay.
func (c *Config) Validate() error {
	if c.Delay < 0 {
		return errors.New("delay must not be negative")
	}
	return nil
}

// NewFactory returns the factory of the drain processor (type and stability
// from metadata.yaml, internal/metadata).
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type,
		func() component.Config { return &Config{} },
		processor.WithTraces(createTraces, metadata.TracesStability))
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config,
	next consumer.Traces) (processor.Traces, error) {
	delay := cfg.(*Config).Delay
	logger := set.Logger
	return processorhelper.NewTraces(ctx, set, cfg, next,
		func(_ context.Context, td ptrace.Traces) (ptrace.Traces, error) { return td, nil },
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		processorhelper.WithShutdown(func(ctx context.Context) error {
			if delay <= 0 {
				return nil
			}
			logger.Info("draining: letting the next components release what they hold", zap.Duration("delay", delay))
			timer := time.NewTimer(delay)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
			return nil
		}))
}
