package openai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShiftJobs: what context_shift and n_keep make of a job's options —
// the shift, the tokens it keeps (n_keep after BOS; -1 the whole prompt),
// max_tokens past the context's room — and the server's default.
func TestShiftJobs(t *testing.T) {
	a := newAPI(t) // 512 positions; "Once upon a time" is BOS and 4 tokens
	for _, tc := range []struct {
		name       string
		body       string
		def        bool // API.ContextShift
		shift      bool
		keep, max_ int
	}{
		{"asked", `{"prompt": "Once upon a time", "max_tokens": 512, "context_shift": true}`, false, true, 1, 512},
		{"n_keep after BOS", `{"prompt": "Once upon a time", "max_tokens": 10, "context_shift": true, "n_keep": 3}`, false, true, 4, 10},
		{"n_keep -1: the prompt", `{"prompt": "Once upon a time", "max_tokens": 10, "context_shift": true, "n_keep": -1}`, false, true, 5, 10},
		{"ids without BOS", `{"prompt": [300, 301, 302], "max_tokens": 10, "context_shift": true, "n_keep": 2}`, false, true, 2, 10},
		{"not asked", `{"prompt": "Once upon a time", "max_tokens": 10, "n_keep": 3}`, false, false, 0, 10},
		{"the default", `{"prompt": "Once upon a time", "max_tokens": 510}`, true, true, 1, 510},
		{"the default refused", `{"prompt": "Once upon a time", "max_tokens": 10, "context_shift": false}`, true, false, 0, 10},
		{"the default without max_tokens", `{"prompt": "Once upon a time"}`, true, false, 0, DefaultCompletionMaxTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.ContextShift = tc.def
			req := CompletionRequest{SamplingRequest: a.NewSamplingRequest()}
			require.Nil(t, Decode([]byte(tc.body), &req))
			j, e := a.CompletionJob(&req)
			require.Nil(t, e)
			assert.Equal(t, tc.shift, j.Options.ContextShift)
			assert.Equal(t, tc.keep, j.Options.ShiftKeep)
			assert.Equal(t, tc.max_, j.Options.MaxTokens)
		})
	}
}
