// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var (
	errEmptyRule = errors.New("`require_continuation` rule has no condition: set " +
		"`caller_span_kind`, `caller_attributes`, `caller_service` or `callee_service`")
	errSpanKind = errors.New("`caller_span_kind` must be one of " +
		"`client`, `server`, `internal`, `producer`, `consumer`")
	errEmptyAttributeKey = errors.New("`caller_attributes` has an empty key")
)

// Config configures the agentidentity processor.
type Config struct {
	// Backfill, when true, copies gen_ai.conversation.id down to descendant
	// spans of the same service that lack it, and marks each such span with
	// agent_identity.conversation.backfilled=true. Zero value and default: false.
	Backfill bool `mapstructure:"backfill"`

	// RequireContinuation lists the rules that decide which cross-service hops
	// must share conversation identity. A hop is compared when any rule
	// matches it; every other hop is recorded with result `not_required` and
	// can never be a mismatch. An empty list compares no hop. Default: one
	// rule, a CLIENT caller span with gen_ai.operation.name=invoke_agent that
	// carries gen_ai.conversation.id (the caller asked the callee to continue
	// that conversation, as the A2A client span does with the remote
	// contextId). See README.md for why this default is safe.
	RequireContinuation []ContinuationRule `mapstructure:"require_continuation"`

	// VerdictMemory: `storage` and `memory_slots` (memory.go).
	VerdictMemory `mapstructure:",squash"`

	// Join: `hop_window`, `max_held_spans` and the cross-trace memories'
	// sizes (joined.go).
	Join `mapstructure:",squash"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ContinuationRule matches a hop; every condition that is set must hold.
type ContinuationRule struct {
	// CallerSpanKind is the span kind the caller span must have: `client`,
	// `server`, `internal`, `producer` or `consumer`. Empty: any kind.
	CallerSpanKind string `mapstructure:"caller_span_kind"`

	// CallerAttributes are span attributes the caller span must carry: an
	// empty value means "present with a non-empty string value", a non-empty
	// value means "equal to this string". Empty map: no attribute condition.
	CallerAttributes map[string]string `mapstructure:"caller_attributes"`

	// CallerService is the service.name of the caller. Empty: any service.
	CallerService string `mapstructure:"caller_service"`

	// CalleeService is the service.name of the callee. Empty: any service.
	CalleeService string `mapstructure:"callee_service"`
}

// The caller span of a rule is the hop's parent span or its nearest ancestor
// in the caller's service that satisfies the span conditions (kind and
// attributes): transport spans (an HTTP client span under the A2A client span)
// inherit the request of the span that made them.

var _ component.Config = (*Config)(nil)

// defaultRules is the safe default of `require_continuation`.
func defaultRules() []ContinuationRule {
	return []ContinuationRule{{
		CallerSpanKind: "client",
		CallerAttributes: map[string]string{
			attrOperationName:  operationInvokeAgent,
			attrConversationID: "",
		},
	}}
}

var spanKinds = map[string]ptrace.SpanKind{
	"client":   ptrace.SpanKindClient,
	"server":   ptrace.SpanKindServer,
	"internal": ptrace.SpanKindInternal,
	"producer": ptrace.SpanKindProducer,
	"consumer": ptrace.SpanKindConsumer,
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	for i, r := range c.RequireContinuation {
		if r.CallerSpanKind == "" && len(r.CallerAttributes) == 0 &&
			r.CallerService == "" && r.CalleeService == "" {
			errs = append(errs, fmt.Errorf("rule %d: %w", i, errEmptyRule))
		}
		if _, ok := spanKinds[strings.ToLower(r.CallerSpanKind)]; r.CallerSpanKind != "" && !ok {
			errs = append(errs, fmt.Errorf("rule %d: %w, got %q", i, errSpanKind, r.CallerSpanKind))
		}
		for k := range r.CallerAttributes {
			if k == "" {
				errs = append(errs, fmt.Errorf("rule %d: %w", i, errEmptyAttributeKey))
			}
		}
	}
	if err := c.Join.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.VerdictMemory.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
