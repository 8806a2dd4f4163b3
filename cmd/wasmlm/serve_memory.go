package main

import (
	"net/http"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Once a burst of requests is over, serve gives the memory it left behind
// back to the system. The Go runtime returns freed heap memory only
// gradually (its background scavenger aims at about 1% of a core), so a
// server that a burst took to a gigabyte stayed there for minutes; an idle
// server has nothing better to do than to collect and return it at once.
const (
	// idleDelay is how long the server must have had no request before it
	// returns memory: a pause in a burst, not the gap between two requests
	// of one client.
	idleDelay = time.Second
	// returnSlack is how much more memory than after the last return the
	// runtime must hold for another to be worth a full collection.
	returnSlack = 16 << 20
)

// memoryReturner serves through next and, when no request has been in for
// idleDelay and the runtime holds returnSlack more than it did after the
// last return, collects the garbage and returns the free memory
// (debug.FreeOSMemory). A collection in an idle process stops nothing, and
// the slack keeps it from running after every quiet second.
type memoryReturner struct {
	next http.Handler

	mu     sync.Mutex
	active int         // requests being served
	timer  *time.Timer // runs check once idle
	base   uint64      // held after the last return
}

func newMemoryReturner(next http.Handler) *memoryReturner {
	m := &memoryReturner{next: next, base: heldMemory()}
	m.timer = time.AfterFunc(time.Hour, m.check)
	m.timer.Stop()
	return m
}

func (m *memoryReturner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.active++
	m.timer.Stop()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.active--; m.active == 0 {
			m.timer.Reset(idleDelay)
		}
	}()
	m.next.ServeHTTP(w, r)
}

// check returns memory if the server is still idle and it is worth it.
func (m *memoryReturner) check() {
	m.mu.Lock()
	idle, held, base := m.active == 0, heldMemory(), m.base
	m.mu.Unlock()
	if !idle || held < base+returnSlack {
		return
	}
	debug.FreeOSMemory()
	m.mu.Lock()
	m.base = heldMemory()
	m.mu.Unlock()
}

// heldMemory is the memory the Go runtime has mapped and not returned to
// the system: about what it adds to the resident set.
func heldMemory() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}
