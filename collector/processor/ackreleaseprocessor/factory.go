// SPDX-License-Identifier: Apache-2.0

// Package ackreleaseprocessor provides `ack_release`, the second of the pair
// ack_hold / ack_release (see ackholdprocessor): placed before the exporter,
// it tells the ack_hold of the same `name` when the spans of a held request
// have been exported (or failed to). With `checkpoint: true` (right after
// groupbytrace) it only records that the spans got past groupbytrace, so
// ack_hold's `resend_after` sends again only what groupbytrace lost.
package ackreleaseprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/ackreleaseprocessor"

//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/ackreleaseprocessor/internal/metadata"
	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/internal/ackpair"
)

// Config configures ack_release.
type Config struct {
	// Name links this ack_release to the ack_hold of the same name. Default "default".
	Name string `mapstructure:"name"`
	// Checkpoint: record that the spans passed here (for ack_hold's
	// `resend_after`) instead of acknowledging them. Default false.
	Checkpoint bool `mapstructure:"checkpoint"`
}

// NewFactory returns the factory of ack_release (type and stability from
// metadata.yaml, internal/metadata).
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type,
		func() component.Config { return &Config{Name: "default"} },
		processor.WithTraces(createTraces, metadata.TracesStability))
}

func createTraces(_ context.Context, _ processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c := cfg.(*Config)
	return &release{reg: ackpair.For(c.Name), checkpoint: c.Checkpoint, next: next}, nil
}

// release is the ack_release processor.
type release struct {
	component.StartFunc
	component.ShutdownFunc
	reg        *ackpair.Registry
	checkpoint bool
	next       consumer.Traces
}

func (*release) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeTraces passes td on, then tells every waiting request whose spans
// td carried that they are out, with the error of the call; a checkpoint
// records that they passed, then passes td on.
func (r *release) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if r.checkpoint {
		r.reg.Pass(td)
		return r.next.ConsumeTraces(ctx, td)
	}
	return r.reg.Release(ctx, td, r.next)
}

var _ processor.Traces = (*release)(nil)
