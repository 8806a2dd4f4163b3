package engine

import "strings"

// stopMatcher holds back streamed text that could still become a stop
// string, so the caller never sees a stop string nor a prefix of one that
// then completes.
type stopMatcher struct {
	stops   []string
	pending strings.Builder // text released by the decoder but not yet emitted
}

// push adds text and returns what can be emitted now. If a stop string is
// complete, hit is true and emit is the text before its first occurrence.
func (m *stopMatcher) push(text string) (emit string, hit bool) {
	if len(m.stops) == 0 {
		return text, false
	}
	m.pending.WriteString(text)
	p := m.pending.String()
	// The earliest occurrence of any stop string ends the text.
	cut := -1
	for _, s := range m.stops {
		if i := strings.Index(p, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		m.pending.Reset()
		return p[:cut], true
	}
	// Hold back the longest suffix that is a prefix of some stop string.
	hold := 0
	for _, s := range m.stops {
		for n := min(len(s)-1, len(p)); n > hold; n-- {
			if strings.HasSuffix(p, s[:n]) {
				hold = n
				break
			}
		}
	}
	m.pending.Reset()
	m.pending.WriteString(p[len(p)-hold:])
	return p[:len(p)-hold], false
}

// flush returns the held-back text: the generation ended without completing
// a stop string.
func (m *stopMatcher) flush() string {
	p := m.pending.String()
	m.pending.Reset()
	return p
}
