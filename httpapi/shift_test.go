package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextShiftRequests: context_shift and n_keep per request, the
// server's default (Options.ContextShift), max_tokens required of a request
// that may shift, and the usage that reports the shifts, on both completion
// endpoints of a server of 64 positions; a reply that max_tokens or the
// context ends says "length", under a grammar too.
func TestContextShiftRequests(t *testing.T) {
	plain := newHandler(t, Options{ContextLength: 64})
	shifting := newHandler(t, Options{ContextLength: 64, ContextShift: true})
	limited := newHandler(t, Options{ContextLength: 64, MaxTokens: 100, ContextShift: true})
	// Greedy, and never ending on BOS or EOS: the generation runs to
	// max_tokens.
	const greedy = `"temperature": 0, "logit_bias": {"1": -100, "2": -100}`
	long := "[" + strings.TrimSuffix(strings.Repeat("300, ", 100), ", ") + "]"
	for _, tc := range []struct {
		name, path, body string
		h                *Handler
		status           int
		param            string // of the error
		shifts, shifted  int    // of the usage, when 200
		prompt           int    // prompt_tokens, when 200
	}{
		{"a completion past the context", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 64, "context_shift": true, ` + greedy + `}`, plain, 200, "", 1, 31, 5},
		{"a grammar's text past the context ends at max_tokens: length", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 64, "context_shift": true, "grammar": "root ::= [a-z ]+", ` + greedy + `}`, plain, 200, "", 1, 31, 5},
		{"a grammar's text that fills the context: length", "/v1/completions",
			`{"prompt": "Once upon a time", "grammar": "root ::= [a-z ]+", ` + greedy + `}`, plain, 200, "", 0, 0, 5},
		{"n_keep keeps more", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 64, "context_shift": true, "n_keep": 4, ` + greedy + `}`, plain, 200, "", 1, 29, 5},
		{"a chat completion past the context", "/v1/chat/completions",
			`{"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 64, "context_shift": true, ` + greedy + `}`, plain, 200, "", -1, 0, 0},
		{"a prompt longer than the context is cut", "/v1/completions",
			`{"prompt": ` + long + `, "max_tokens": 4, "context_shift": true, ` + greedy + `}`, plain, 200, "", 1, 64, 100},
		{"the server's default", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 64, ` + greedy + `}`, shifting, 200, "", 1, 31, 5},
		{"the server's default without max_tokens stays in the context", "/v1/completions",
			`{"prompt": "Once upon a time", ` + greedy + `}`, shifting, 200, "", 0, 0, 5},
		{"without context_shift", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 64}`, plain, 400, "max_tokens", 0, 0, 0},
		{"context_shift false on a server that shifts", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 64, "context_shift": false}`, shifting, 400, "max_tokens", 0, 0, 0},
		{"context_shift without max_tokens", "/v1/chat/completions",
			`{"messages": [{"role": "user", "content": "hi"}], "context_shift": true}`, plain, 400, "max_tokens", 0, 0, 0},
		{"max_tokens past the context on a server without a limit", "/v1/completions",
			`{"prompt": "Once upon a time", "max_tokens": 150, "context_shift": true, ` + greedy + `}`, plain, 200, "", 3, 93, 5},
		{"max_tokens past the server's limit", "/v1/completions",
			`{"prompt": "hi", "max_tokens": 101, "context_shift": true}`, limited, 400, "max_tokens", 0, 0, 0},
		{"max_tokens past the context without context_shift", "/v1/completions",
			`{"prompt": "hi", "max_tokens": 65, "context_shift": false}`, limited, 400, "max_tokens", 0, 0, 0},
		{"n_keep below -1", "/v1/completions",
			`{"prompt": "hi", "max_tokens": 10, "context_shift": true, "n_keep": -2}`, plain, 400, "n_keep", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(tc.h, "POST", tc.path, tc.body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status != http.StatusOK {
				assert.Equal(t, tc.param, *apiErrorOf(t, w.Body.Bytes()).Param)
				return
			}
			var c struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage map[string]int `json:"usage"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &c))
			assert.Equal(t, "length", c.Choices[0].FinishReason)
			if tc.shifts < 0 { // a chat prompt's length is the template's
				assert.Positive(t, c.Usage["context_shifts"], w.Body.String())
				return
			}
			assert.Equal(t, tc.shifts, c.Usage["context_shifts"], w.Body.String())
			assert.Equal(t, tc.shifted, c.Usage["context_shifted_tokens"], w.Body.String())
			assert.Equal(t, tc.prompt, c.Usage["prompt_tokens"])
			if tc.shifts == 0 {
				assert.NotContains(t, w.Body.String(), "context_shift", "usage keeps OpenAI's fields when nothing shifted")
			}
		})
	}
}
