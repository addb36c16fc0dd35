// SPDX-License-Identifier: Apache-2.0

package recall

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A key keeps its first value; a key hashed to a taken slot evicts the older
// one (reported); parts are separated in the hash.
func TestTable(t *testing.T) {
	tab, err := Open(context.Background(), nil, 1, 0, nil)
	require.NoError(t, err)
	a, b := KeyOf("svc", "ctx-1"), KeyOf("svc", "ctx-2")
	now, held, evicted := tab.PutIfAbsent(a, ValueOf("e1"))
	assert.Equal(t, ValueOf("e1"), now)
	assert.False(t, held)
	assert.False(t, evicted)
	now, held, _ = tab.PutIfAbsent(a, ValueOf("e2"))
	assert.Equal(t, ValueOf("e1"), now, "the first value stays")
	assert.True(t, held)
	_, _, evicted = tab.PutIfAbsent(b, ValueOf("e3"))
	assert.True(t, evicted, "one slot: b replaces a")
	_, ok := tab.Get(a)
	assert.False(t, ok)
	assert.NotEqual(t, KeyOf("ab", "c"), KeyOf("a", "bc"))
	assert.Equal(t, Value{}, ValueOf(""))
	assert.NotEqual(t, Value{}, ValueOf("x"))
	require.NoError(t, tab.Close(context.Background()))
}
