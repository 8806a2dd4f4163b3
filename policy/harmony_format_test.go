package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestChatFormatGrammarHarmony: for gpt-oss's template, a JSON
// response_format holds the final channel's message, after any analysis
// messages: replies sampled under it at temperature 1 are whole matches
// whose content (chat.SplitReasoning) is JSON of the schema. For another
// template the JSON is the whole reply, as FormatGrammar's; a bad schema
// is refused naming its field either way.
func TestChatFormatGrammarHarmony(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	harmony, err := chat.Named("gpt-oss")
	require.NoError(t, err)
	chatml, err := chat.Named("chatml")
	require.NoError(t, err)
	schema := json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`)
	const final = "<|channel|>final<|message|>"
	for _, tc := range []struct {
		name    string
		f       ResponseFormat
		tmpl    chat.Template
		accepts []string
		refuses []string
	}{
		{"json_schema, gpt-oss", ResponseFormat{Type: FormatJSONSchema, Schema: schema}, harmony,
			[]string{final + `{"n": 1}`, "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant" + final + `{"n":2}`},
			[]string{`{"n": 1}`, final + `{"m": 1}`}},
		{"json_object, gpt-oss", ResponseFormat{Type: FormatJSONObject}, harmony,
			[]string{final + `{"a": [1]}`}, []string{`{"a": [1]}`, final + `[1]`}},
		{"json_schema, chatml", ResponseFormat{Type: FormatJSONSchema, Schema: schema}, chatml,
			[]string{`{"n": 1}`}, []string{final + `{"n": 1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := gs.ChatFormatGrammar(tc.f, tc.tmpl)
			require.NoError(t, err)
			g := c.(*Grammar)
			for _, s := range tc.accepts {
				assert.True(t, g.Accepts(s), s)
			}
			for _, s := range tc.refuses {
				assert.False(t, g.Accepts(s), s)
			}
		})
	}

	c, err := gs.ChatFormatGrammar(ResponseFormat{Type: FormatJSONSchema, Schema: schema}, harmony)
	require.NoError(t, err)
	g := c.(*Grammar)
	s := newSession(t, m)
	for seed := range uint64(6) {
		res, err := s.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{
			MaxTokens: 120, Constraint: g, Sampling: sampling.Params{Temperature: 1, Seed: seed}}, nil)
		require.NoError(t, err, "seed %d", seed)
		require.True(t, g.Accepts(res.Text), "seed %d: %q", seed, res.Text)
		_, content := chat.SplitReasoning(res.Text)
		var v struct{ N *int }
		require.NoError(t, json.Unmarshal([]byte(content), &v), "seed %d: content %q of %q", seed, content, res.Text)
		require.NotNil(t, v.N, "seed %d: %q", seed, content)
	}

	_, err = gs.ChatFormatGrammar(ResponseFormat{Type: FormatJSONSchema, Schema: json.RawMessage(`{"type": "object", "properties": {"k": {"minLength": "x"}}}`)}, harmony)
	var oe *engine.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Contains(t, oe.Field, "response_format.json_schema.schema.properties.k")
}
