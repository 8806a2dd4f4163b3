package chat

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/grammar/jsonschema"
)

// TestExcludingGBNF: the rules excludingGBNF writes match exactly the texts
// that do not contain the delimiter, checked against strings.Contains for
// every short text over the delimiter's characters and one other, and
// random texts made of its parts (delimiters that overlap themselves
// included).
func TestExcludingGBNF(t *testing.T) {
	for _, tc := range []struct{ delim, alphabet string }{
		{"aab", "abc"},
		{"abab", "abc"},
		{"<|end|>", "<|end>x"},
	} {
		conv := jsonschema.NewConverter()
		conv.Rule("root", excludingGBNF(conv, "text", tc.delim))
		g, err := grammar.Parse(conv.GBNF())
		require.NoError(t, err, conv.GBNF())
		texts := []string{""}
		for n := 0; n < 7 && (n < 5 || len(tc.alphabet) <= 3); n++ {
			var longer []string
			for _, s := range texts {
				if len(s) != n {
					continue
				}
				for _, c := range tc.alphabet {
					longer = append(longer, s+string(c))
				}
			}
			texts = append(texts, longer...)
		}
		texts = append(texts, "say <|end| and <|end>> but never", "x<<|end|>", "<|end|")
		// Texts made of parts of the delimiter, which a long one needs.
		pieces := []string{tc.delim, tc.delim[:len(tc.delim)/2], tc.delim[len(tc.delim)/2:], tc.delim[1:], tc.delim[:len(tc.delim)-1], "x"}
		r := rand.New(rand.NewPCG(1, uint64(len(tc.delim))))
		for range 3000 {
			var b strings.Builder
			for range r.IntN(6) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			texts = append(texts, b.String())
		}
		for _, s := range texts {
			if g.Accepts(s) == strings.Contains(s, tc.delim) {
				t.Fatalf("%q: accepts %q = %v\n%s", tc.delim, s, g.Accepts(s), conv.GBNF())
			}
		}
	}
}

// TestHarmonyContentGrammar: for gpt-oss, the content grammar takes any
// number of analysis messages and then the final channel's message held to
// the content rule, the reply ReasoningParser splits into reasoning and
// that content; for another template the content is the whole reply.
func TestHarmonyContentGrammar(t *testing.T) {
	const final = "<|channel|>final<|message|>"
	const analysis = "<|channel|>analysis<|message|>"
	const next = "<|end|><|start|>assistant"
	schema := []byte(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`)
	build := func(name string) *grammar.Grammar {
		tmpl, err := Named(name)
		require.NoError(t, err)
		conv := jsonschema.NewConverter()
		rule, err := conv.Add("content", schema)
		require.NoError(t, err)
		g, err := grammar.Parse(tmpl.ContentGrammar(conv, rule))
		require.NoError(t, err)
		return g
	}
	harmony := build("gpt-oss")
	for _, tc := range []struct {
		reply, reasoning string
	}{
		{final + `{"n": 1}`, ""},
		{analysis + "The user wants a number <|end| of sorts." + next + final + `{"n":2}`, "The user wants a number <|end| of sorts."},
		{analysis + "a" + next + analysis + "b" + next + final + `{"n": 3}`, "ab"},
	} {
		require.True(t, harmony.Accepts(tc.reply), tc.reply)
		reasoning, content := SplitReasoning(tc.reply)
		assert.Equal(t, tc.reasoning, reasoning, tc.reply)
		_, err := parseJSON(content)
		assert.NoError(t, err, "content %q of %q", content, tc.reply)
	}
	for _, reply := range []string{
		`{"n": 1}`,                  // no channel
		final + `{"n": "1"}`,        // not the schema's
		final + `{"n": 1} and more`, // text after the JSON
		analysis + "a<|end|>b" + next + final + `{"n": 1}`,           // <|end|> inside the analysis
		analysis + "a" + next + "<|channel|>commentary" + final,      // another channel
		"<|channel|>final <|constrain|>json<|message|>" + `{"n": 1}`, // a content type, which the reasoning parser does not read
	} {
		assert.False(t, harmony.Accepts(reply), reply)
	}
	chatml := build("chatml")
	assert.True(t, chatml.Accepts(`{"n": 1}`))
	assert.False(t, chatml.Accepts(final+`{"n": 1}`))
	assert.False(t, Template{}.WrapsContent())
}
