// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// attrCache keeps, per label set of a counter, the option that carries its
// attribute set, built once: after groupbytrace every call is one small
// trace, and building, sorting and hashing the set per call cost more than
// judging the trace. Keys are the tally's label-set types (hopKey, pairKey,
// noCalleeKey, mismatchKey, unresolvedKey), each a counter of its own; their
// number is the metrics' cardinality, bounded by services, agents and results.
type attrCache struct{ m sync.Map }

// mismatchKey is a hopKey counted in agent_identity.mismatches.
type mismatchKey hopKey

// unresolvedKey is a callee service counted in agent_identity.unresolved.
type unresolvedKey string

func (c *attrCache) get(key any, build func() attribute.Set) metric.AddOption {
	if o, ok := c.m.Load(key); ok {
		return o.(metric.AddOption)
	}
	o, _ := c.m.LoadOrStore(key, metric.WithAttributeSet(build()))
	return o.(metric.AddOption)
}
