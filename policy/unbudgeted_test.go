package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/sampling"
)

// weatherParameters is a tool's parameters: one string of at most 12
// characters, which the limit could otherwise close early.
const weatherParameters = `{"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}`

// TestForcedCallIsNotClosedToFit: under a forced call's grammar a seeded
// generation that max_tokens ends is the start of the one it does not
// (the call is cut, never closed early with text the model did not
// write), ending with FinishLength; under the same schema as a response
// format the text near the limit is steered to a whole match, as
// docs/structured-output.md's "Always whole" says.
func TestForcedCallIsNotClosedToFit(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	call, err := gs.ToolGrammar(chat.ToolFormatGeneric, []chat.Tool{{Name: "get_weather", Parameters: json.RawMessage(weatherParameters)}},
		chat.ToolChoice{Mode: chat.ToolRequired}, false)
	require.NoError(t, err)
	format, err := gs.FormatGrammar(ResponseFormat{Type: FormatJSONSchema, Schema: json.RawMessage(weatherParameters)})
	require.NoError(t, err)
	generate := func(c engine.Constraint, seed uint64, maxTokens int) engine.Result {
		res, err := newSession(t, m).Generate(context.Background(), onceUpon, engine.GenerateOptions{Constraint: c, MaxTokens: maxTokens,
			Sampling: sampling.Params{Temperature: 1, Seed: seed}}, nil)
		require.NoError(t, err)
		return res
	}
	for _, tc := range []struct {
		name   string
		c      engine.Constraint
		prefix bool // a cut text is the start of the whole one; else it is a whole match
		from   int  // the first max_tokens tried: a whole match needs a token a byte of its shortest
	}{
		{"forced call", call, true, 1},
		{"response format", format, false, len(`{"city": ""}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			differ := 0
			for seed := range uint64(3) {
				full := generate(tc.c, seed, 0)
				require.Equal(t, engine.FinishStop, full.FinishReason, "seed %d ends on its own: %q", seed, full.Text)
				for limit := tc.from; limit < len(full.Tokens); limit++ {
					res := generate(tc.c, seed, limit)
					require.Len(t, res.Tokens, limit, "seed %d, max_tokens %d", seed, limit)
					if tc.prefix {
						assert.Equal(t, engine.FinishLength, res.FinishReason, "seed %d, max_tokens %d", seed, limit)
						assert.True(t, strings.HasPrefix(full.Text, res.Text), "seed %d, max_tokens %d: %q is not the start of %q", seed, limit, res.Text, full.Text)
						continue
					}
					assert.True(t, format.(*Grammar).Accepts(res.Text), "seed %d, max_tokens %d: %q", seed, limit, res.Text)
					if !strings.HasPrefix(full.Text, res.Text) {
						differ++
					}
				}
			}
			if !tc.prefix {
				assert.Positive(t, differ, "the response format's text was closed early")
			}
		})
	}
}
