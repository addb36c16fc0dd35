// SPDX-License-Identifier: Apache-2.0

package agentidentityprocessor // import "github.com/otel-agent-identity/otel-agent-identity/collector/processor/agentidentityprocessor"

import (
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// attrCache keeps, per label set of a counter, the options that carry its
// attribute set, built once: after groupbytrace every call is one small
// trace, and building, sorting and hashing the set per call cost more than
// judging the trace. Keys are the tally's label-set types (hopKey, pairKey,
// noCalleeKey, mismatchKey, unresolvedKey), each a counter of its own; their
// number is the metrics' cardinality, bounded by services, agents and results.
// The value is a one-element slice passed on as Add's variadic options, so a
// hit allocates nothing.
type attrCache struct{ m sync.Map }

// labelSet is a label-set key: comparable, and its attribute set.
type labelSet interface {
	comparable
	set() attribute.Set
}

// mismatchKey is a hopKey counted in agent_identity.mismatches.
type mismatchKey hopKey

// unresolvedKey is a callee service counted in agent_identity.unresolved.
type unresolvedKey string

// cachedOpts returns the Add options of key's label set, building them on
// first use.
func cachedOpts[K labelSet](c *attrCache, key K) []metric.AddOption {
	if o, ok := c.m.Load(key); ok {
		return o.([]metric.AddOption)
	}
	return c.store(key, key.set())
}

func (c *attrCache) store(key any, set attribute.Set) []metric.AddOption {
	o, _ := c.m.LoadOrStore(key, []metric.AddOption{metric.WithAttributeSet(set)})
	return o.([]metric.AddOption)
}
