package policy

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
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
// time). A text that ends before MaxTokens ends with engine.FinishStop; one
// that reaches it with engine.FinishLength, unless the grammar could not
// have gone on (closed: every whole match is final).
func TestGrammarHoldsSampledText(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	s := newSession(t, m)
	for _, tc := range []struct {
		name, src string
		closed    bool
	}{
		{"json", readGrammar(t, "json"), false},
		{"arithmetic", readGrammar(t, "arithmetic"), false},
		{"list", readGrammar(t, "list"), false},
		{"yes-no", `root ::= ("yes" | "no") "."`, true},
		{"digits", `root ::= [0-9]{3,6}`, false},
		{"name-age", `root ::= "{\"name\": \"" [A-Za-z ]{1,20} "\", \"age\": " [1-9] [0-9]? "}"`, false},
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
			want := engine.FinishStop
			if len(res.Tokens) == opts.MaxTokens && !tc.closed {
				want = engine.FinishLength // whole, but the limit ended it
				cut++
			}
			require.Equal(t, want, res.FinishReason, "%s seed %d: %q", tc.name, seed, res.Text)
		}
		t.Logf("%s: %d of 12 closed at MaxTokens", tc.name, cut)
	}
}

// TestGrammarFinishAtTheLimit: a generation under a grammar that MaxTokens
// ends says FinishLength, though its text is a whole match, when the
// grammar would have let it go on; FinishStop when no token could extend
// it (the grammar ended with the limit).
func TestGrammarFinishAtTheLimit(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	s := newSession(t, m)
	end, err := gs.Compile(`root ::= "The end."`)
	require.NoError(t, err)
	free, err := s.Generate(context.Background(), "Once", engine.GenerateOptions{Constraint: end, MaxTokens: 50}, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, src string
		max       int
		want      engine.FinishReason
	}{
		{"letters", `root ::= [a-z]+`, 5, engine.FinishLength},
		{"a+", `root ::= "a"+`, 100, engine.FinishLength},
		{"final", `root ::= "The end."`, len(free.Tokens), engine.FinishStop},
	} {
		g, err := gs.Compile(tc.src)
		require.NoError(t, err, tc.name)
		res, err := s.Generate(context.Background(), "Once", engine.GenerateOptions{Constraint: g, MaxTokens: tc.max}, nil)
		require.NoError(t, err, tc.name)
		require.Len(t, res.Tokens, tc.max, tc.name)
		require.True(t, g.Accepts(res.Text), "%s: %q", tc.name, res.Text)
		require.Equal(t, tc.want, res.FinishReason, tc.name)
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
		require.Equal(t, "tools[1].function.parameters.not", oe.Field)
		require.Contains(t, oe.Error(), `tools[1].function.parameters.not cannot be used: "not" is not supported`)
	}
	_, err := gs.ToolGrammar(chat.ToolFormatGeneric, tools[:1], chat.ToolChoice{Mode: chat.ToolAuto}, true)
	require.NoError(t, err)
	_, err = gs.ToolGrammar(chat.ToolFormatGeneric, []chat.Tool{{Name: "s", Parameters: json.RawMessage(`{"type": "string"}`)}}, chat.ToolChoice{Mode: chat.ToolRequired}, true)
	require.ErrorContains(t, err, `must describe an object`)
}

// TestFormatGrammarRefusals: grammars and schemas that no finite text
// matches, or whose alternatives are wider than the matcher holds, are
// refused when compiled, naming the request's field (the path into a
// schema) and the rule or limit; a schema's keyword past the grammar's
// repetition limit names the keyword, never "grammar". An enum of 5,000
// values and an anyOf of 2,000 objects, wider than the matcher's limit as
// written, are tries once parsed: they compile, and a generation under
// each is a match; 5,000 words that each begin with their own character
// and go on with their own text are 5,000 parses after the quote.
func TestFormatGrammarRefusals(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	enum := make([]string, 5000)
	for i := range enum {
		enum[i] = strconv.Quote("v" + strconv.Itoa(i))
	}
	chars := make([]string, 5000)
	for i := range chars {
		chars[i] = strconv.Quote(string(rune(0x4E00+i)) + strconv.Itoa(i))
	}
	objects := make([]string, 2000)
	for i := range objects {
		objects[i] = `{"type":"object","properties":{"k` + strconv.Itoa(i) + `":{"type":"integer"}},"required":["k` + strconv.Itoa(i) + `"]}`
	}
	schema := func(s string) ResponseFormat {
		return ResponseFormat{Type: FormatJSONSchema, Schema: json.RawMessage(s)}
	}
	for _, tc := range []struct {
		name  string
		f     ResponseFormat
		field string
		want  []string
	}{
		{"endless grammar", ResponseFormat{Grammar: `root ::= "a" root`}, "grammar", []string{`rule "root" can never end`, `needs rule "root" again`}},
		{"empty class", ResponseFormat{Grammar: `root ::= [z-a]`}, "grammar", []string{`the character class [z-a] at line 1 column 10, which matches no character`}},
		{"endless schema", schema(`{"type":"object","properties":{"k":{"$ref":"#"}},"required":["k"]}`),
			"response_format.json_schema.schema.properties.k", []string{"cannot end: no finite JSON text is valid for it"}},
		{"endless definition", schema(`{"type":"object","properties":{"n":{"$ref":"#/$defs/node"}},"required":["n"],"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}},"required":["next"]}}}`),
			"response_format.json_schema.schema.$defs.node.properties.next", []string{"cannot end"}},
		{"enum of words with their own first characters", schema(`{"enum":[` + strings.Join(chars, ",") + `]}`), "response_format.json_schema.schema.enum", []string{"5000 parses", "limit of 4096"}},
		{"minLength past the grammar's", schema(`{"type":"object","properties":{"k":{"type":"string","minLength":5000}}}`),
			"response_format.json_schema.schema.properties.k.minLength", []string{`"minLength" is 5000, more than MaxMinRepeat (2000)`}},
		{"maxLength past the grammar's", schema(`{"type":"object","properties":{"k":{"type":"string","maxLength":3000}}}`),
			"response_format.json_schema.schema.properties.k.maxLength", []string{`"maxLength" is 3000, more than MaxMaxRepeat (2000)`}},
		{"maxItems past the grammar's", schema(`{"type":"object","properties":{"k":{"type":"array","maxItems":2001}}}`),
			"response_format.json_schema.schema.properties.k.maxItems", []string{`"maxItems" is 2001, more than MaxMaxRepeat (2000)`}},
		{"a GBNF maximum past the grammar's", ResponseFormat{Grammar: `root ::= [a-z]{0,5000}`}, "grammar", []string{"repeating at most 5000 times: at most 2000"}},
		{"maxLength below minLength", schema(`{"type":"object","properties":{"k":{"type":"string","minLength":3,"maxLength":2}}}`),
			"response_format.json_schema.schema.properties.k.maxLength", []string{`"maxLength" is less than "minLength"`}},
		{"a property's wide enum", schema(`{"type":"object","properties":{"k":{"enum":[` + strings.Join(chars, ",") + `]}}}`),
			"response_format.json_schema.schema.properties.k.enum", []string{"limit of 4096"}},
		{"an anyOf's keyword", schema(`{"anyOf":[{"type":"string"},{"type":"string","pattern":"(a"}]}`),
			"response_format.json_schema.schema.anyOf[1].pattern", []string{`"pattern" "(a"`}},
	} {
		_, err := gs.FormatGrammar(tc.f)
		var oe *engine.OptionError
		require.ErrorAs(t, err, &oe, tc.name)
		require.Equal(t, tc.field, oe.Field, tc.name)
		for _, w := range tc.want {
			require.Contains(t, oe.Error(), w, tc.name)
		}
		if tc.f.Grammar == "" {
			require.NotContains(t, oe.Error(), "rule \"", "%s: a schema's message names no rule of the grammar made for it", tc.name)
		}
	}
	// Recursion with a way out, and a wide enum, compile.
	for _, f := range []ResponseFormat{
		schema(`{"type":"object","properties":{"k":{"$ref":"#"}}}`),
		{Grammar: `root ::= "a" root | "b"`},
	} {
		_, err := gs.FormatGrammar(f)
		require.NoError(t, err)
	}
	s := newSession(t, m)
	valid := map[string]func(text string) bool{
		`{"enum":[` + strings.Join(enum, ",") + `]}`: func(text string) bool { return slices.Contains(enum, strings.TrimSpace(text)) },
		`{"anyOf":[` + strings.Join(objects, ",") + `]}`: func(text string) bool {
			var v map[string]int
			if json.Unmarshal([]byte(text), &v) != nil || len(v) != 1 {
				return false
			}
			for k := range v {
				n, err := strconv.Atoi(strings.TrimPrefix(k, "k"))
				return strings.HasPrefix(k, "k") && err == nil && n < len(objects)
			}
			return false
		},
	}
	for wide, isValid := range valid {
		c, err := gs.FormatGrammar(schema(wide))
		require.NoError(t, err)
		g := c.(*Grammar)
		for seed := range uint64(4) {
			res, err := s.Generate(context.Background(), onceUpon, engine.GenerateOptions{Constraint: g, MaxTokens: 32,
				Sampling: sampling.Params{Temperature: 1, Seed: seed}}, nil)
			require.NoError(t, err)
			require.Equal(t, engine.FinishStop, res.FinishReason)
			require.True(t, g.Accepts(res.Text), res.Text)
			require.True(t, isValid(res.Text), res.Text)
		}
	}
}

// TestToolGrammarRefusesEndlessParameters: a forced call of a tool whose
// parameters can never end names that tool's parameters (a choice of
// tools where another can end is a grammar that can).
func TestToolGrammarRefusesEndlessParameters(t *testing.T) {
	m := loadStories260K(t)
	gs := NewGrammars(m)
	tools := []chat.Tool{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "b", Parameters: json.RawMessage(`{"type":"object","properties":{"k":{"$ref":"#"}},"required":["k"]}`)}}
	_, err := gs.ToolGrammar(chat.ToolFormatGeneric, tools, chat.ToolChoice{Mode: chat.ToolRequired}, false)
	require.NoError(t, err)
	_, err = gs.ToolGrammar(chat.ToolFormatGeneric, tools, chat.ToolChoice{Mode: chat.ToolFunction, Function: "b"}, false)
	var oe *engine.OptionError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "tools[1].function.parameters.properties.k", oe.Field)
	require.Contains(t, oe.Error(), "cannot end")
}
