// SPDX-License-Identifier: Apache-2.0

// Package agentidentityprocessor checks conversation identity across the
// cross-service hops of a trace: it finds edges whose parent and child spans
// belong to different services, compares the conversation id the caller asked
// the callee to continue with the one the callee's agent actually used, marks
// the callee's entry span with agent_identity.hop.* attributes and counts the
// results. See README.md for the hop model and the configuration.
package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

//go:generate go tool -modfile=../../tools/go.mod mdatagen metadata.yaml
