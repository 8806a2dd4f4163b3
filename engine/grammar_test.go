package engine

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestGrammarHoldsSampledText samples from stories260K at temperature 1 under
// grammars it could never follow by itself: every text is a whole match,
// those that reach MaxTokens too (the budget steers them to close in
// time), and every one ends with FinishStop.
func TestGrammarHoldsSampledText(t *testing.T) {
	m := loadStories260K(t)
	s := newSession(t, m)
	for _, tc := range []struct{ name, src string }{
		{"json", readGrammar(t, "json")},
		{"arithmetic", readGrammar(t, "arithmetic")},
		{"list", readGrammar(t, "list")},
		{"yes-no", `root ::= ("yes" | "no") "."`},
		{"digits", `root ::= [0-9]{3,6}`},
		{"name-age", `root ::= "{\"name\": \"" [A-Za-z ]{1,20} "\", \"age\": " [1-9] [0-9]? "}"`},
	} {
		g, err := m.Grammar(tc.src)
		require.NoError(t, err, tc.name)
		cut := 0
		for seed := range uint64(12) {
			opts := GenerateOptions{MaxTokens: 40 + 10*int(seed), Grammar: g,
				Sampling: sampling.Params{Temperature: 1, Seed: seed}}
			res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
			require.NoError(t, err, "%s seed %d", tc.name, seed)
			require.True(t, g.Accepts(res.Text), "%s seed %d (%s): %q", tc.name, seed, res.FinishReason, res.Text)
			// Whole, so "stop", even where MaxTokens made it close.
			require.Equal(t, FinishStop, res.FinishReason, "%s seed %d", tc.name, seed)
			if len(res.Tokens) == opts.MaxTokens {
				cut++
			}
		}
		t.Logf("%s: %d of 12 closed at MaxTokens", tc.name, cut)
	}
}

func readGrammar(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../grammar/testdata/" + name + ".gbnf")
	require.NoError(t, err)
	return string(b)
}

// TestGrammarEndsAWholeMatch: a text that no token can extend ends the
// generation even though the model has no end-of-generation token to pick.
func TestGrammarEndsAWholeMatch(t *testing.T) {
	m := loadStories260K(t)
	s := newSession(t, m)
	g, err := m.Grammar(`root ::= "The end."`)
	require.NoError(t, err)
	res, err := s.Generate(context.Background(), "Once", GenerateOptions{Grammar: g, MaxTokens: 50}, nil)
	require.NoError(t, err)
	require.Equal(t, "The end.", res.Text)
	require.Equal(t, FinishStop, res.FinishReason)
}

func TestGrammarErrors(t *testing.T) {
	m := loadStories260K(t)
	_, err := m.Grammar(`root ::= nothing`)
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorIs(t, err, grammar.ErrSyntax)
	require.Contains(t, err.Error(), `undefined rule "nothing"`)

}

// TestGrammarCacheReusesCompiled: the same source gives the same compiled
// grammar, so its masks are reused.
func TestGrammarCacheReusesCompiled(t *testing.T) {
	m := loadStories260K(t)
	a, err := m.Grammar(`root ::= "a"`)
	require.NoError(t, err)
	for i := range grammarCacheSize + 2 {
		_, err := m.Grammar(`root ::= "b"{1,` + strconv.Itoa(i+2) + `}`)
		require.NoError(t, err)
	}
	b, err := m.Grammar(`root ::= "a"`)
	require.NoError(t, err)
	require.NotSame(t, a, b, "evicted after grammarCacheSize others")
	c, err := m.Grammar(`root ::= "a"`)
	require.NoError(t, err)
	require.Same(t, b, c)
}

// TestGrammarRefusesStopStrings: a caller's stop string could cut the text
// a grammar keeps whole, so the two exclude each other.
func TestGrammarRefusesStopStrings(t *testing.T) {
	m := loadStories260K(t)
	g, err := m.FormatGrammar(ResponseFormat{Type: FormatJSONObject})
	require.NoError(t, err)
	_, err = newSession(t, m).Generate(context.Background(), "Once", GenerateOptions{Grammar: g, Stop: []string{","}}, nil)
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "stop", oe.Field)
}

// TestToolGrammarChecksEveryTool: every tool's parameters are checked,
// whatever the choice, and the error names the tool's field.
func TestToolGrammarChecksEveryTool(t *testing.T) {
	m := loadStories260K(t)
	tools := []chat.Tool{{Name: "a", Parameters: json.RawMessage(`{}`)}, {Name: "b", Parameters: json.RawMessage(`{"type": "object", "not": {}}`)}}
	for _, mode := range []chat.ToolMode{chat.ToolAuto, chat.ToolNone, chat.ToolRequired} {
		_, err := m.ToolGrammar(chat.ToolFormatGeneric, tools, chat.ToolChoice{Mode: mode}, true)
		var oe *OptionError
		require.ErrorAs(t, err, &oe, "mode %v", mode)
		require.Equal(t, "tools[1].function.parameters", oe.Field)
		require.Contains(t, oe.Error(), `tools[1].function.parameters cannot be used: /: "not" is not supported`)
	}
	_, err := m.ToolGrammar(chat.ToolFormatGeneric, tools[:1], chat.ToolChoice{Mode: chat.ToolAuto}, true)
	require.NoError(t, err)
	_, err = m.ToolGrammar(chat.ToolFormatGeneric, []chat.Tool{{Name: "s", Parameters: json.RawMessage(`{"type": "string"}`)}}, chat.ToolChoice{Mode: chat.ToolRequired}, true)
	require.ErrorContains(t, err, `must describe an object`)
}
