package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name   string
		stops  []string
		pieces []string
		want   []string // what each push emits
		hitAt  int      // index of the piece that completes a stop string, -1 if none
		rest   string   // what flush releases when no stop string hit
	}{
		{"no stops passes through", nil, []string{"a", "b"}, []string{"a", "b"}, -1, ""},
		{"stop inside one piece", []string{"END"}, []string{"abcENDxyz"}, []string{"abc"}, 0, ""},
		{"stop split over pieces", []string{"END"}, []string{"ab", "cE", "N", "Dx"}, []string{"ab", "c", "", ""}, 3, ""},
		{"prefix that does not complete is released", []string{"END"}, []string{"aE", "N", "x"}, []string{"a", "", "ENx"}, -1, ""},
		{"held prefix flushed at the end", []string{"END"}, []string{"aEN"}, []string{"a"}, -1, "EN"},
		{"earliest of two stops", []string{"cd", "bcdx"}, []string{"ab", "cd"}, []string{"a", "b"}, 1, ""},
		{"longest held prefix wins", []string{"xyz", "yq"}, []string{"axy"}, []string{"a"}, -1, "xy"},
		{"multibyte stop", []string{"é!"}, []string{"caf", "é", "!"}, []string{"caf", "", ""}, 2, ""},
		{"stop at the very start", []string{"\n"}, []string{"\nabc"}, []string{""}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newStopMatcher(tt.stops)
			var got []string
			hitAt := -1
			for i, p := range tt.pieces {
				emit, hit := m.push([]byte(p))
				got = append(got, string(emit))
				if hit {
					hitAt = i
					break
				}
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.hitAt, hitAt)
			if hitAt < 0 {
				assert.Equal(t, tt.rest, string(m.flush()))
			}
			// Never show a stop string.
			for _, s := range tt.stops {
				assert.NotContains(t, strings.Join(got, ""), s)
			}
		})
	}
}
