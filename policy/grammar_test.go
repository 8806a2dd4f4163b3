package policy

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestGrammarHoldsSampledText samples from stories260K at temperature 1 under
// grammars it could never follow by itself: every text is a whole match,
// those that reach MaxTokens too (the budget steers them to close in
// time), and every one ends with engine.FinishStop.
func TestGrammarHoldsSampledText(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	s := newSession(t, m)
	for _, tc := range []struct{ name, src string }{
		{"json", readGrammar(t, "json")},
		{"arithmetic", readGrammar(t, "arithmetic")},
		{"list", readGrammar(t, "list")},
		{"yes-no", `root ::= ("yes" | "no") "."`},
		{"digits", `root ::= [0-9]{3,6}`},
		{"name-age", `root ::= "{\"name\": \"" [A-Za-z ]{1,20} "\", \"age\": " [1-9] [0-9]? "}"`},
	} {
		g, err := gs.Compile(tc.src)
		require.NoError(t, err, tc.name)
		cut := 0
		for seed := range uint64(12) {
			opts := engine.GenerateOptions{MaxTokens: 40 + 10*int(seed), Constraint: g,
				Sampling: sampling.Params{Temperature: 1, Seed: seed}}
			res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
			require.NoError(t, err, "%s seed %d", tc.name, seed)
			require.True(t, g.Accepts(res.Text), "%s seed %d (%s): %q", tc.name, seed, res.FinishReason, res.Text)
			// Whole, so "stop", even where MaxTokens made it close.
			require.Equal(t, engine.FinishStop, res.FinishReason, "%s seed %d", tc.name, seed)
			if len(res.Tokens) == opts.MaxTokens {
				cut++
			}
		}
		t.Logf("%s: %d of 12 closed at MaxTokens", tc.name, cut)
	}
}

// TestGrammarEndsAWholeMatch: a text that no token can extend ends the
// generation even though the model has no end-of-generation token to pick.
func TestGrammarEndsAWholeMatch(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	s := newSession(t, m)
	g, err := gs.Compile(`root ::= "The end."`)
	require.NoError(t, err)
	res, err := s.Generate(context.Background(), "Once", engine.GenerateOptions{Constraint: g, MaxTokens: 50}, nil)
	require.NoError(t, err)
	require.Equal(t, "The end.", res.Text)
	require.Equal(t, engine.FinishStop, res.FinishReason)
}

func TestGrammarErrors(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	_, err := gs.Compile(`root ::= nothing`)
	require.ErrorIs(t, err, engine.ErrInvalidOption)
	require.ErrorIs(t, err, grammar.ErrSyntax)
	require.Contains(t, err.Error(), `undefined rule "nothing"`)

}

// TestGrammarCacheReusesCompiled: the same source gives the same compiled
// grammar, so its masks are reused.
func TestGrammarCacheReusesCompiled(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	a, err := gs.Compile(`root ::= "a"`)
	require.NoError(t, err)
	for i := range grammarCacheSize + 2 {
		_, err := gs.Compile(`root ::= "b"{1,` + strconv.Itoa(i+2) + `}`)
		require.NoError(t, err)
	}
	b, err := gs.Compile(`root ::= "a"`)
	require.NoError(t, err)
	require.NotSame(t, a, b, "evicted after grammarCacheSize others")
	c, err := gs.Compile(`root ::= "a"`)
	require.NoError(t, err)
	require.Same(t, b, c)
}

// TestGrammarRefusesStopStrings: a caller's stop string could cut the text
// a grammar keeps whole, so the two exclude each other.
func TestGrammarRefusesStopStrings(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	g, err := gs.FormatGrammar(ResponseFormat{Type: FormatJSONObject})
	require.NoError(t, err)
	_, err = newSession(t, m).Generate(context.Background(), "Once", engine.GenerateOptions{Constraint: g, Stop: []string{","}}, nil)
	var oe *engine.OptionError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "stop", oe.Field)
}

// TestToolGrammarChecksEveryTool: every tool's parameters are checked,
// whatever the choice, and the error names the tool's field.
func TestToolGrammarChecksEveryTool(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	tools := []chat.Tool{{Name: "a", Parameters: json.RawMessage(`{}`)}, {Name: "b", Parameters: json.RawMessage(`{"type": "object", "not": {}}`)}}
	for _, mode := range []chat.ToolMode{chat.ToolAuto, chat.ToolNone, chat.ToolRequired} {
		_, err := gs.ToolGrammar(chat.ToolFormatGeneric, tools, chat.ToolChoice{Mode: mode}, true)
		var oe *engine.OptionError
		require.ErrorAs(t, err, &oe, "mode %v", mode)
		require.Equal(t, "tools[1].function.parameters", oe.Field)
		require.Contains(t, oe.Error(), `tools[1].function.parameters cannot be used: /: "not" is not supported`)
	}
	_, err := gs.ToolGrammar(chat.ToolFormatGeneric, tools[:1], chat.ToolChoice{Mode: chat.ToolAuto}, true)
	require.NoError(t, err)
	_, err = gs.ToolGrammar(chat.ToolFormatGeneric, []chat.Tool{{Name: "s", Parameters: json.RawMessage(`{"type": "string"}`)}}, chat.ToolChoice{Mode: chat.ToolRequired}, true)
	require.ErrorContains(t, err, `must describe an object`)
}
