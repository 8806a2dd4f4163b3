//go:build !js

package grammarref_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/grammarref"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/sampling"
)

// TestForcedToolCallsValidate samples forced tool calls (tool_choice
// required, with and without parallel calls, and named functions, one
// whose strings have an enum and a maxLength) in every tool format from stories260K at temperature 1: each reply parses
// into calls of declared tools whose arguments ajv finds valid for the
// tool's parameters, and llama.cpp accepts the reply under the grammar.
func TestForcedToolCallsValidate(t *testing.T) {
	runner := grammarref.Need(t)
	var tools []chat.Tool
	schemas := map[string]json.RawMessage{}
	for _, name := range []string{"tool_weather", "tool_search"} {
		params, err := os.ReadFile("../../grammar/jsonschema/testdata/corpus/" + name + ".json")
		require.NoError(t, err)
		tools = append(tools, chat.Tool{Name: name, Description: "a tool", Parameters: params})
		schemas[name] = params
	}
	// Both string parameters required, one with maxLength and one with an
	// enum: every call of it shows that the format holds raw strings to
	// their schema.
	cityWeather := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":8},"unit":{"type":"string","enum":["c","f"]}},"required":["city","unit"]}`)
	tools = append(tools, chat.Tool{Name: "city_weather", Description: "a tool", Parameters: cityWeather})
	schemas["city_weather"] = cityWeather
	tools = append(tools, chat.Tool{Name: "no_arguments"})
	schemas["no_arguments"] = json.RawMessage(`{"type": "object", "additionalProperties": false}`)
	m, err := engine.LoadGGUF(models.Default())
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	gs := policy.NewGrammars(m)

	type call struct{ where, name, arguments string }
	var calls []call
	var grammarJobs []grammarref.GrammarJob
	replies := 0
	for _, format := range []chat.ToolFormat{chat.ToolFormatGeneric, chat.ToolFormatLlama3, chat.ToolFormatHermes, chat.ToolFormatMistral, chat.ToolFormatQwenXML, chat.ToolFormatHarmony, chat.ToolFormatLFM2, chat.ToolFormatGemma4} {
		for _, tc := range []struct {
			choice   chat.ToolChoice
			parallel bool
		}{
			{chat.ToolChoice{Mode: chat.ToolRequired}, false},
			{chat.ToolChoice{Mode: chat.ToolRequired}, true},
			{chat.ToolChoice{Mode: chat.ToolFunction, Function: "tool_search"}, true},
			{chat.ToolChoice{Mode: chat.ToolFunction, Function: "city_weather"}, false},
		} {
			src, err := chat.ToolCallGrammar(format, tools, tc.choice, tc.parallel)
			require.NoError(t, err)
			g, err := gs.Compile(src)
			require.NoError(t, err)
			job := grammarref.GrammarJob{Grammar: src}
			for seed := range uint64(5) {
				where := fmt.Sprintf("%s %+v parallel=%v seed %d", format, tc.choice, tc.parallel, seed)
				res, err := s.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{
					MaxTokens: 300, Constraint: g, Sampling: sampling.Params{Temperature: 1, Seed: seed}}, nil)
				require.NoError(t, err, where)
				job.Texts = append(job.Texts, res.Text)
				replies++
				_, got, err := chat.ParseToolCallsFor(format, res.Text, seed, tools)
				require.NoError(t, err, where)
				require.NotEmpty(t, got, "%s: no call in %q", where, res.Text)
				if !tc.parallel {
					require.Len(t, got, 1, "%s: %q", where, res.Text)
				}
				for _, c := range got {
					require.Contains(t, schemas, c.Name, where)
					if tc.choice.Mode == chat.ToolFunction {
						require.Equal(t, tc.choice.Function, c.Name, where)
					}
					require.NotEmpty(t, c.ID, where)
					calls = append(calls, call{where, c.Name, c.Arguments})
				}
			}
			grammarJobs = append(grammarJobs, job)
		}
	}
	var schemaJobs []grammarref.SchemaJob
	for _, c := range calls {
		schemaJobs = append(schemaJobs, grammarref.SchemaJob{Schema: schemas[c.name], Texts: []string{c.arguments}})
	}
	gr, sr, err := runner.Run(grammarJobs, schemaJobs)
	require.NoError(t, err)
	for i, r := range sr {
		require.Empty(t, r.Error)
		require.True(t, r.Valid[0], "%s: %s's arguments %s are not valid", calls[i].where, calls[i].name, calls[i].arguments)
	}
	for i, r := range gr {
		require.Empty(t, r.Error)
		for j, ok := range r.Accepts {
			require.True(t, ok, "llama.cpp rejects %q under its grammar", grammarJobs[i].Texts[j])
		}
	}
	t.Logf("%d forced calls in %d replies, all with valid arguments", len(calls), replies)
}
