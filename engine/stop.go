package engine

import "bytes"

// stopMatcher holds back streamed text that could still become a stop
// string, so the caller never sees a stop string nor a prefix of one that
// then completes. It reuses its buffers: pushing a token's text allocates
// nothing once they have grown to the longest held text.
type stopMatcher struct {
	stops   [][]byte
	pending []byte // text released by the decoder but not yet emitted
	out     []byte // what the last push emitted
}

func newStopMatcher(stops []string) stopMatcher {
	m := stopMatcher{}
	for _, s := range stops {
		m.stops = append(m.stops, []byte(s))
	}
	return m
}

// push adds text and returns what can be emitted now, valid until the next
// push or flush. If a stop string is complete, hit is true and emit is the
// text before its first occurrence.
func (m *stopMatcher) push(text []byte) (emit []byte, hit bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	m.pending = append(m.pending, text...)
	p := m.pending
	// The earliest occurrence of any stop string ends the text.
	cut := -1
	for _, s := range m.stops {
		if i := bytes.Index(p, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		m.out = append(m.out[:0], p[:cut]...)
		m.pending = p[:0]
		return m.out, true
	}
	// Hold back the longest suffix that is a prefix of some stop string.
	hold := 0
	for _, s := range m.stops {
		for n := min(len(s)-1, len(p)); n > hold; n-- {
			if bytes.HasSuffix(p, s[:n]) {
				hold = n
				break
			}
		}
	}
	m.out = append(m.out[:0], p[:len(p)-hold]...)
	m.pending = p[:copy(p, p[len(p)-hold:])]
	return m.out, false
}

// flush returns the held-back text, valid until the next push: the
// generation ended without completing a stop string.
func (m *stopMatcher) flush() []byte {
	m.out = append(m.out[:0], m.pending...)
	m.pending = m.pending[:0]
	return m.out
}
