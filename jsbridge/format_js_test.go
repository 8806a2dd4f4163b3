package jsbridge

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/grammar"
)

// storyGrammar is a GBNF grammar the default model's vocabulary can write.
const storyGrammar = `root ::= "Once upon a time, " name " was " ("happy" | "sad") "." ( " " name " " verb "." )?
name ::= "Tom" | "Lily" | "Ben"
verb ::= "ran" | "played" | "smiled"`

// sampled is options for n tokens at temperature 1 with seed, plus extra.
func sampled(n, seed int, extra map[string]any) js.Value {
	o := map[string]any{"temperature": 1, "maxTokens": n, "seed": seed}
	for k, v := range extra {
		o[k] = v
	}
	return obj(o)
}

// TestGrammarOption: generate and stream with grammar write texts the
// grammar matches, for several seeds at temperature 1; the streamed chunks
// make the result's text.
func TestGrammarOption(t *testing.T) {
	g, err := grammar.Parse(storyGrammar)
	require.NoError(t, err)
	b := newLoaded(t)
	for seed := 1; seed <= 4; seed++ {
		res := mustCall(t, b, "generate", "", sampled(64, seed, map[string]any{"grammar": storyGrammar}))
		text := res.Get("text").String()
		assert.True(t, g.Accepts(text), "seed %d: %q", seed, text)
		assert.Equal(t, "stop", res.Get("finishReason").String())

		log := newChunkLog(t)
		res = mustCall(t, b, "stream", "", sampled(64, seed, map[string]any{"grammar": storyGrammar}), log.fn)
		assert.Equal(t, text, res.Get("text").String(), "seed %d: stream and generate agree", seed)
		assert.Equal(t, text, log.joined())
	}
}

// TestResponseFormatJSON: responseFormat json_object gives a JSON object,
// json_schema one valid for the schema, for several seeds at temperature 1;
// type text is free text, as no option.
func TestResponseFormatJSON(t *testing.T) {
	b := newLoaded(t)
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "maxLength": 12},
			"age":  map[string]any{"type": "integer", "minimum": 0, "maximum": 120},
		},
		"required":             []any{"name", "age"},
		"additionalProperties": false,
	}
	for seed := 1; seed <= 4; seed++ {
		res := mustCall(t, b, "generate", "Once upon a time", sampled(128, seed, map[string]any{
			"responseFormat": map[string]any{"type": "json_object"},
		}))
		var v any
		text := res.Get("text").String()
		require.NoError(t, json.Unmarshal([]byte(text), &v), "seed %d: %q", seed, text)
		assert.IsType(t, map[string]any{}, v)

		res = mustCall(t, b, "generate", "Once upon a time", sampled(128, seed, map[string]any{
			"responseFormat": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "person", "schema": schema, "strict": true}},
		}))
		text = res.Get("text").String()
		var p struct {
			Name *string
			Age  *int
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&p), "seed %d: %q", seed, text)
		require.NotNil(t, p.Name, "seed %d: %q", seed, text)
		require.NotNil(t, p.Age, "seed %d: %q", seed, text)
		assert.LessOrEqual(t, len([]rune(*p.Name)), 12)
		assert.True(t, *p.Age >= 0 && *p.Age <= 120, "age %d", *p.Age)
	}
	// llama.cpp's form: a schema beside type json_object.
	res := mustCall(t, b, "generate", "Once upon a time", sampled(128, 5, map[string]any{
		"responseFormat": map[string]any{"type": "json_object", "schema": schema},
	}))
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Get("text").String()), &p))
	assert.Contains(t, p, "age")

	plain := mustCall(t, b, "generate", "Once", sampled(20, 7, nil)).Get("text").String()
	text := mustCall(t, b, "generate", "Once", sampled(20, 7, map[string]any{"responseFormat": map[string]any{"type": "text"}})).Get("text").String()
	assert.Equal(t, plain, text)
}

// TestFormatOptionErrors: a bad responseFormat or grammar rejects at once
// with invalid_argument, naming the option as JavaScript spells it (the
// keys inside responseFormat as OpenAI does) and as OpenAI's API does.
func TestFormatOptionErrors(t *testing.T) {
	b := newLoaded(t)
	cyclic := jsFunction("", "const s = {type: 'object'}; s.self = s; return s;").Invoke()
	rf := func(v any) map[string]any { return map[string]any{"responseFormat": v} }
	schemaFormat := func(js map[string]any) map[string]any {
		return rf(map[string]any{"type": "json_schema", "json_schema": js})
	}
	cases := []struct {
		opts         map[string]any
		want         string
		field, param string
	}{
		{map[string]any{"grammar": 5}, "grammar must be a string (a GBNF grammar), got 5", "grammar", "grammar"},
		{map[string]any{"grammar": "root ::= [a-"}, "grammar ", "grammar", "grammar"},
		{map[string]any{"grammar": `root ::= "a" x`}, "grammar ", "grammar", "grammar"},
		{map[string]any{"grammar": `root ::= "a" root`}, `grammar is not a grammar this engine takes: rule "root" can never end`, "grammar", "grammar"},
		{map[string]any{"grammar": "root ::= [z-a]"}, "the character class [z-a] at line 1 column 10, which matches no character", "grammar", "grammar"},
		{schemaFormat(map[string]any{"name": "x", "schema": map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"type": "string", "minLength": 5000}}}}),
			`"minLength" is 5000, more than MaxMinRepeat (2000)`, "responseFormat.json_schema.schema.properties.k.minLength", "response_format.json_schema.schema.properties.k.minLength"},
		{schemaFormat(map[string]any{"name": "x", "schema": map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"type": "string", "maxLength": 5000}}}}),
			`"maxLength" is 5000, more than MaxMaxRepeat (2000)`, "responseFormat.json_schema.schema.properties.k.maxLength", "response_format.json_schema.schema.properties.k.maxLength"},
		{map[string]any{"grammar": "root ::= [a-z]{0,3000}"}, "repeating at most 3000 times: at most 2000", "grammar", "grammar"},
		{schemaFormat(map[string]any{"name": "x", "schema": map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"$ref": "#"}}, "required": []any{"k"}}}),
			"cannot end", "responseFormat.json_schema.schema.properties.k", "response_format.json_schema.schema.properties.k"},
		{rf("json"), `responseFormat must be an object, got string "json"`, "responseFormat", "response_format"},
		{rf(map[string]any{}), "responseFormat.type must be 'text', 'json_object' or 'json_schema', got undefined", "responseFormat.type", "response_format.type"},
		{rf(map[string]any{"type": "xml"}), `responseFormat.type must be 'text', 'json_object' or 'json_schema', got string "xml"`, "responseFormat.type", "response_format.type"},
		{rf(map[string]any{"type": "text", "schemas": map[string]any{}}), `unknown option "schemas" in responseFormat (known: type, json_schema, schema)`, "", ""},
		{rf(map[string]any{"type": "json_schema", "schema": map[string]any{}}), "responseFormat.schema goes with type 'json_object' (llama.cpp's form)", "responseFormat.schema", "response_format.schema"},
		{rf(map[string]any{"type": "json_object", "schema": 5}), "responseFormat.schema must be a JSON schema (an object), got 5", "responseFormat.schema", "response_format.schema"},
		{rf(map[string]any{"type": "json_object", "json_schema": map[string]any{}}), `responseFormat.json_schema applies to type 'json_schema' only, not "json_object"`, "responseFormat.json_schema", "response_format.json_schema"},
		{rf(map[string]any{"type": "json_schema"}), "responseFormat.json_schema is required for type 'json_schema'", "responseFormat.json_schema", "response_format.json_schema"},
		{schemaFormat(map[string]any{"name": "x"}), "responseFormat.json_schema.schema is required", "responseFormat.json_schema.schema", "response_format.json_schema.schema"},
		{schemaFormat(map[string]any{"name": "x", "schema": 5}), "responseFormat.json_schema.schema must be a JSON schema (an object), got 5", "responseFormat.json_schema.schema", "response_format.json_schema.schema"},
		{schemaFormat(map[string]any{"name": "x", "schema": cyclic}), "responseFormat.json_schema.schema must be JSON: TypeError", "responseFormat.json_schema.schema", "response_format.json_schema.schema"},
		{schemaFormat(map[string]any{"schema": map[string]any{}}), "responseFormat.json_schema.name must be a non-empty string, got undefined", "responseFormat.json_schema.name", "response_format.json_schema.name"},
		{schemaFormat(map[string]any{"name": "a b", "schema": map[string]any{}}), `responseFormat.json_schema.name must be 1 to 64 letters, digits, '_' or '-', got string "a b"`, "responseFormat.json_schema.name", "response_format.json_schema.name"},
		{schemaFormat(map[string]any{"name": "x", "strict": "yes", "schema": map[string]any{}}), `responseFormat.json_schema.strict must be a boolean, got string "yes"`, "responseFormat.json_schema.strict", "response_format.json_schema.strict"},
		{schemaFormat(map[string]any{"name": "x", "schema": map[string]any{}, "schemas": 1}), `unknown option "schemas" in responseFormat.json_schema`, "", ""},
		{map[string]any{"grammar": `root ::= "a"`, "responseFormat": map[string]any{"type": "json_object"}}, `grammar cannot be combined with response_format "json_object"`, "grammar", "grammar"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.want), func(t *testing.T) {
			for _, method := range []string{"generate", "stream"} {
				args := []any{"Once", obj(c.opts)}
				if method == "stream" {
					log := newChunkLog(t)
					args = append(args, log.fn)
				}
				_, err := call(t, b, method, args...)
				var je *jsError
				require.ErrorAs(t, err, &je, method)
				assert.Equal(t, "invalid_argument", je.Code)
				assert.Contains(t, je.Message, c.want)
				assert.Equal(t, c.field, je.Field)
				assert.Equal(t, c.param, je.Param)
			}
		})
	}
}

// TestAmbiguousGrammarEndsWithAMatch: a grammar whose parses double with
// every "a" (held to "a" by logit_bias) goes past the matcher's 4,096
// parses during the generation; the matcher keeps those that finish
// soonest, and the chat call resolves with n "a" and n closers, the same
// text for the same seed.
func TestAmbiguousGrammarEndsWithAMatch(t *testing.T) {
	b := newLoaded(t)
	ids := ints(mustCall(t, b, "tokenize", "aaaa", obj(map[string]any{"addBos": false})))
	a := ids[len(ids)-1] // "a" inside a word
	request := func() js.Value {
		return chatRequest(t, map[string]any{
			"messages": userSays("Once"), "max_tokens": 40, "seed": 1, "logit_bias": map[string]any{fmt.Sprint(a): 100},
			"grammar": "root ::= x\nx ::= \"a\" x \"b\" | y\ny ::= \"a\" x \"c\" | \"\"\n",
		})
	}
	res := mustCall(t, b, "chat", request())
	text := res.Get("text").String()
	rest := strings.TrimLeft(text, "a")
	n := len(text) - len(rest)
	assert.Greater(t, n, 12, "the parses went past 4,096: %q", text)
	assert.Equal(t, "stop", res.Get("finishReason").String())
	assert.Len(t, rest, n, "a whole match: %q", text)
	assert.Empty(t, strings.Trim(rest, "bc"), "%q", text)
	assert.Equal(t, text, mustCall(t, b, "chat", request()).Get("text").String(), "the same seed, the same text")
}
