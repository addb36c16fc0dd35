// SPDX-License-Identifier: Apache-2.0

// Package ackholdprocessor provides `ack_hold`, the first of a pair of
// processors (the second is `ack_release`, ackreleaseprocessor) that make a
// pipeline acknowledge a request only once every span of it has left the
// pipeline: judged and exported. What the two share is internal/ackpair.
//
// groupbytrace answers its caller as soon as it holds the spans, and holds
// them in memory for wait_duration: a SIGKILL loses what it holds although the
// sender (or a persistent queue in front) was told they were delivered.
// `ack_hold`, placed before groupbytrace, passes each request on and then
// waits; `ack_release`, placed before the exporter, tells it when the spans
// of the request have been exported (or failed to). Only then does
// `ack_hold` return, with the exporter's error if any; after `timeout` (a
// trace evicted by groupbytrace, a lost release) it returns a retryable
// error. The sender's persistent queue (tier2-identity.yaml: the durable
// intake) thus keeps every request until its verdicts are exported, across a
// SIGKILL of this process; what it re-delivers after a restart is judged
// again (agentidentity's verdict memory marks those verdicts duplicate).
//
// The two are linked by `name` (default "default"): put both in the same
// pipeline with the same name. A request's spans are matched per trace: the
// first span of each trace in the request marks that trace's share of it
// (groupbytrace keeps one request's spans of a trace together, and so does
// the batch processor unless `send_batch_max_size` splits batches: leave it
// unset between the two).
//
// groupbytrace loses spans: the traces it evicts, and the spans that reach it
// while it releases their trace (it appends them to the trace it is about to
// delete; open-telemetry/opentelemetry-collector#1811, still in v0.161). Such
// a share would hold its request for the whole `timeout`. With
// `resend_after` and an `ack_release` with `checkpoint: true` right after
// groupbytrace, a share that has not passed the checkpoint within
// resend_after is passed on again (only that trace's spans of the request).
package ackholdprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/ackholdprocessor"

//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/ackholdprocessor/internal/metadata"
	"github.com/otel-agent-identity/otel-agent-identity/collector/processor/internal/ackpair"
)

// ErrTimeout is returned (retryable) when a request's spans did not leave
// the pipeline within `timeout`.
var ErrTimeout = ackpair.ErrTimeout

// Config configures ack_hold.
type Config struct {
	// Name links this ack_hold to the ack_release of the same name. Default "default".
	Name string `mapstructure:"name"`
	// Timeout is how long a request waits for its spans to be exported
	// before it is answered with a retryable error. Set it above
	// groupbytrace's wait_duration plus the batch timeout and the export
	// time, and below the sender's timeout. Default 30s.
	Timeout time.Duration `mapstructure:"timeout"`
	// ResendAfter, when positive, is how long a request's share of a trace
	// may take to pass the ack_release of the same name with `checkpoint:
	// true` (placed right after groupbytrace): a share that has not passed it
	// by then was lost on the way (groupbytrace evicted it, or dropped it as
	// it reached a trace being released) and is passed on again, every
	// ResendAfter until it passes. Set it above groupbytrace's wait_duration
	// plus its queueing under load. Default 0: never sent again (only the
	// sender's retry after `timeout` recovers a lost share).
	ResendAfter time.Duration `mapstructure:"resend_after"`
}

// Validate rejects a timeout that is not positive and a negative resend_after.
func (c *Config) Validate() error {
	if c.Timeout <= 0 {
		return errors.New("`timeout` must be positive")
	}
	if c.ResendAfter < 0 {
		return errors.New("`resend_after` must not be negative")
	}
	return nil
}

// NewFactory returns the factory of ack_hold (type and stability from
// metadata.yaml, internal/metadata).
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type,
		func() component.Config { return &Config{Name: "default", Timeout: 30 * time.Second} },
		processor.WithTraces(createTraces, metadata.TracesStability))
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c := cfg.(*Config)
	logger := set.Logger
	return &hold{reg: ackpair.For(c.Name), timeout: c.Timeout, resend: c.ResendAfter, next: next,
		resent: func(n int) {
			logger.Warn("ack_hold: spans lost before the checkpoint, passed on again", zap.Int("traces", n))
		}}, nil
}

// hold is the ack_hold processor.
type hold struct {
	component.StartFunc
	component.ShutdownFunc
	reg             *ackpair.Registry
	timeout, resend time.Duration
	resent          func(traces int)
	next            consumer.Traces
}

func (*hold) Capabilities() consumer.Capabilities { return consumer.Capabilities{MutatesData: false} }

// ConsumeTraces passes td on and returns once every trace of it was exported
// (the exporter's error, if any), or with ErrTimeout, or the context's error.
func (h *hold) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return h.reg.Hold(ctx, td, h.timeout, h.resend, h.resent, h.next)
}

var _ processor.Traces = (*hold)(nil)
