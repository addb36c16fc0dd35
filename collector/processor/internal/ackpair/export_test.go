// SPDX-License-Identifier: Apache-2.0

package ackpair

// Waiting is the number of traces some request still waits on (tests only).
func (r *Registry) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiting)
}
