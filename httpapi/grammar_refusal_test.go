package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/grammar"
)

// TestGrammarRefusals: a grammar or schema no finite text matches, one
// whose alternatives are wider than the grammar matcher holds, and a
// schema keyword past the grammar's repetition limit are each a 400
// invalid_request_error before any token is generated — streamed or not,
// on both endpoints — whose param is the user's field (the path into the
// schema) and whose message names the rule, the class or the limit.
func TestGrammarRefusals(t *testing.T) {
	h := newHandler(t, Options{})
	chars := make([]string, 5000)
	for i := range chars {
		chars[i] = strconv.Quote(string(rune(0x4E00+i)) + strconv.Itoa(i))
	}
	schema := func(s string) string {
		return `"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": ` + s + `}}`
	}
	for _, tc := range []struct {
		name, field, param string
		want               []string
	}{
		{"endless grammar", `"grammar": "root ::= \"a\" root"`, "grammar", []string{`rule \"root\" can never end`}},
		{"empty class", `"grammar": "root ::= [z-a]"`, "grammar", []string{"the character class [z-a] at line 1 column 10, which matches no character"}},
		{"a surrogate", `"grammar": "root ::= \"abc\" \"\\uD800\""`, "grammar", []string{`\\uD800 at line 1 column 17, half of a UTF-16 surrogate pair`}},
		{"endless schema", schema(`{"type":"object","properties":{"k":{"$ref":"#"}},"required":["k"]}`),
			"response_format.json_schema.schema.properties.k", []string{"cannot end"}},
		{"enum of words with their own first characters", schema(`{"enum":[` + strings.Join(chars, ",") + `]}`), "response_format.json_schema.schema.enum", []string{"5000 parses", "limit of 4096"}},
		{"minLength", schema(`{"type":"object","properties":{"k":{"type":"string","minLength":5000}}}`),
			"response_format.json_schema.schema.properties.k.minLength", []string{"MaxMinRepeat (2000)"}},
		{"maxLength", schema(`{"type":"object","properties":{"k":{"type":"string","maxLength":5000}}}`),
			"response_format.json_schema.schema.properties.k.maxLength", []string{"MaxMaxRepeat (2000)"}},
		{"maxItems", schema(`{"type":"array","items":{"type":"integer"},"maxItems":2001}`),
			"response_format.json_schema.schema.maxItems", []string{"MaxMaxRepeat (2000)"}},
		{"surrogate escape in a pattern", schema(`{"type":"object","properties":{"k":{"type":"string","pattern":"^[\\uDC00-\\uDFFF]+$"}},"required":["k"]}`),
			"response_format.json_schema.schema.properties.k.pattern", []string{`\\uDC00 is half of a UTF-16 surrogate pair, which no UTF-8 text holds`}},
		{"pattern repeating what matches the empty string", schema(`{"type":"object","properties":{"k":{"type":"string","pattern":"^(a?)+$"}},"required":["k"]}`),
			"response_format.json_schema.schema.properties.k.pattern", []string{`a group that matches the empty string, repeated without bound`}},
		{"GBNF maximum", `"grammar": "root ::= [a-z]{1,3000}"`, "grammar", []string{"repeating at most 3000 times: at most 2000"}},
	} {
		for _, stream := range []bool{false, true} {
			for _, ep := range []struct{ path, prompt string }{
				{"/v1/completions", `"prompt": "Once"`},
				{"/v1/chat/completions", `"messages": [{"role": "user", "content": "Once"}]`},
			} {
				body := `{` + ep.prompt + `, "max_tokens": 8, "stream": ` + strconv.FormatBool(stream) + `, ` + tc.field + `}`
				w := do(h, http.MethodPost, ep.path, body)
				what := tc.name + " " + ep.path + " stream=" + strconv.FormatBool(stream)
				require.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", what, w.Body)
				require.NotContains(t, w.Header().Get("Content-Type"), "text/event-stream", what)
				e := apiErrorOf(t, w.Body.Bytes())
				require.Equal(t, "invalid_request_error", e.Type, what)
				require.NotNil(t, e.Param, what)
				require.Equal(t, tc.param, *e.Param, what)
				for _, s := range tc.want {
					require.Contains(t, w.Body.String(), s, what)
				}
			}
		}
	}
}

// TestWideAlternationsGenerate: an enum of 5,000 values and an anyOf of
// 2,000 objects, more parses than the matcher holds as written but tries
// once parsed, each stream a valid value and [DONE], no error event.
func TestWideAlternationsGenerate(t *testing.T) {
	h := newHandler(t, Options{})
	enum := make([]string, 5000)
	for i := range enum {
		enum[i] = strconv.Quote("v" + strconv.Itoa(i))
	}
	objects := make([]string, 2000)
	keys := make([]string, len(objects))
	for i := range objects {
		keys[i] = "k" + strconv.Itoa(i)
		objects[i] = `{"type":"object","properties":{"` + keys[i] + `":{"type":"integer"}},"required":["` + keys[i] + `"]}`
	}
	for schema, valid := range map[string]func(string) bool{
		`{"enum":[` + strings.Join(enum, ",") + `]}`: func(text string) bool { return slices.Contains(enum, text) },
		`{"anyOf":[` + strings.Join(objects, ",") + `]}`: func(text string) bool {
			var v map[string]int
			return json.Unmarshal([]byte(text), &v) == nil && len(v) == 1 && slices.ContainsFunc(keys, func(k string) bool { _, ok := v[k]; return ok })
		},
	} {
		body := `{"prompt": "Once", "max_tokens": 32, "stream": true, "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": ` + schema + `}}}`
		text, finish := completeText(t, h, "/v1/completions", body)
		require.Equal(t, "stop", finish)
		require.True(t, valid(text), text)
		w := do(h, http.MethodPost, "/v1/completions", body)
		events := parseSSE(t, w.Body.String())
		require.Equal(t, "[DONE]", events[len(events)-1].data)
		for _, ev := range events {
			require.Empty(t, ev.name, "no error event: %s", ev.data)
		}
	}
}

// TestGrammarFailingMidwayNamesItsField: a grammar that fails during the
// generation (past a matcher limit no check before it could foresee)
// names the field the grammar came in — grammar, response_format, tools
// — not the prompt: a 400 before any token, an error event after some.
func TestGrammarFailingMidwayNamesItsField(t *testing.T) {
	h := newHandler(t, Options{})
	failed := fmt.Errorf("%w: %w", engine.ErrGrammar, grammar.ErrTooComplex)
	tool := `"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "tool_choice": "required"`
	for _, tc := range []struct{ path, fields, param string }{
		{"/v1/completions", `"prompt": "x", "grammar": "root ::= [a-z]+"`, "grammar"},
		{"/v1/completions", `"prompt": "x", "response_format": {"type": "json_object"}`, "response_format"},
		{"/v1/chat/completions", `"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= [a-z]+"`, "grammar"},
		{"/v1/chat/completions", `"messages": [{"role": "user", "content": "x"}], ` + tool, "tools"},
		{"/v1/completions", `"prompt": "x"`, "prompt"},
	} {
		h.generate = fakeTokens(0, failed)
		w := do(h, http.MethodPost, tc.path, `{`+tc.fields+`, "stream": true}`)
		require.Equal(t, http.StatusBadRequest, w.Code, "%s: %s", tc.fields, w.Body)
		e := apiErrorOf(t, w.Body.Bytes())
		require.Equal(t, tc.param, *e.Param, tc.fields)
		require.Contains(t, e.Message, "too complex", tc.fields)

		h.generate = fakeTokens(2, failed)
		w = do(h, http.MethodPost, tc.path, `{`+tc.fields+`, "stream": true}`)
		require.Equal(t, http.StatusOK, w.Code, tc.fields)
		events := parseSSE(t, w.Body.String())
		last := events[len(events)-1]
		require.Equal(t, "error", last.name, tc.fields)
		require.Equal(t, tc.param, *apiErrorOf(t, []byte(last.data)).Param, tc.fields)
	}
}

// TestAmbiguousGrammarEndsWithAMatch: what the checks before a request
// cannot see — a grammar whose parses double with every "a" (each "a" may
// close with "b" or "c") — goes past the matcher's 4,096 parses during the
// generation; the matcher keeps the parses that finish soonest (and
// renews its tables when their dropped stacks fill them), and the stream,
// streamed or not, ends with [DONE] and a text of the grammar:
// n "a" then n closers, or with finish reason length a prefix of one.
func TestAmbiguousGrammarEndsWithAMatch(t *testing.T) {
	h := newHandler(t, Options{})
	w := do(h, http.MethodPost, "/tokenize", `{"content": "aaaa"}`)
	require.Equal(t, http.StatusOK, w.Code)
	var tok struct{ Tokens []int }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &tok))
	a := tok.Tokens[len(tok.Tokens)-1] // "a" inside a word
	// 440 tokens (streamed): past about 210 "a" the matcher's tables fill
	// up and are renewed midway.
	for _, maxTokens := range []int{40, 440} {
		for _, stream := range []bool{true, false} {
			if maxTokens > 40 && !stream {
				continue
			}
			body := fmt.Sprintf(`{"prompt": "Once", "max_tokens": %d, "seed": 1, "stream": %t, "logit_bias": {"%d": 100}, `+
				`"grammar": "root ::= x\nx ::= \"a\" x \"b\" | y\ny ::= \"a\" x \"c\" | \"\"\n"}`, maxTokens, stream, a)
			what := fmt.Sprintf("max_tokens %d stream %t", maxTokens, stream)
			if stream {
				w = do(h, http.MethodPost, "/v1/completions", body)
				require.Equal(t, http.StatusOK, w.Code, w.Body.String())
				events := parseSSE(t, w.Body.String())
				require.Equal(t, "[DONE]", events[len(events)-1].data, what)
				for _, ev := range events {
					require.Empty(t, ev.name, "%s: no error event: %s", what, ev.data)
				}
			}
			text, finish := completeText(t, h, "/v1/completions", body)
			rest := strings.TrimLeft(text, "a")
			n := len(text) - len(rest)
			require.Greater(t, n, 12, "%s: the parses went past 4,096 (%q)", what, text)
			require.LessOrEqual(t, len(rest), n, what)
			require.Empty(t, strings.Trim(rest, "bc"), "%s: %q", what, text)
			require.Contains(t, []string{"stop", "length"}, finish, what)
			if finish == "stop" {
				require.Len(t, rest, n, "%s: a whole match: %q", what, text)
			}
			again, _ := completeText(t, h, "/v1/completions", body)
			require.Equal(t, text, again, "%s: the same seed, the same text", what)
		}
	}
}
