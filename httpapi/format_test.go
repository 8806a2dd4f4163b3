package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weatherTool is a tool with parameters, for requests that are refused
// before any generation (its description takes most of stories260K's
// context in the generic tool format).
const weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
	"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}`

// TestConstrainedOutputs: at temperature 1, for several seeds, a
// json_object reply is a JSON object, a json_schema reply has the
// schema's shape and a grammar's reply matches the grammar, on both
// endpoints, streamed or not, and the text is whole (finish_reason "stop"),
// also when max_tokens is tight (it is steered to close at the limit; then
// finish_reason may be "length": the limit ended it).
func TestConstrainedOutputs(t *testing.T) {
	h := newHandler(t, Options{})
	person := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0}},
		"required": ["name", "age"], "additionalProperties": false}`
	digits := regexp.MustCompile(`^\{"n": [0-9]{1,3}\}$`)
	for _, tc := range []struct {
		name, fields string
		check        func(t *testing.T, text string)
	}{
		{"json_object", `"response_format": {"type": "json_object"}`, func(t *testing.T, text string) {
			var v map[string]any
			assert.NoError(t, json.Unmarshal([]byte(text), &v), "%q", text)
		}},
		{"json_object, tight", `"response_format": {"type": "json_object"}, "max_tokens": 12`, func(t *testing.T, text string) {
			var v map[string]any
			assert.NoError(t, json.Unmarshal([]byte(text), &v), "%q", text)
		}},
		{"json_schema", `"response_format": {"type": "json_schema", "json_schema": {"name": "person", "strict": true, "schema": ` + person + `}}`, func(t *testing.T, text string) {
			var v struct {
				Name *string `json:"name"`
				Age  *int    `json:"age"`
			}
			dec := json.NewDecoder(strings.NewReader(text))
			dec.DisallowUnknownFields()
			if assert.NoError(t, dec.Decode(&v), "%q", text) {
				assert.NotNil(t, v.Name, "%q", text)
				assert.LessOrEqual(t, len([]rune(*v.Name)), 20)
				if assert.NotNil(t, v.Age, "%q", text) {
					assert.GreaterOrEqual(t, *v.Age, 0)
				}
			}
		}},
		{"grammar", `"grammar": "root ::= \"{\\\"n\\\": \" [0-9] [0-9]? [0-9]? \"}\""`, func(t *testing.T, text string) {
			assert.Regexp(t, digits, text)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := 1; seed <= 5; seed++ {
				for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
					for _, stream := range []bool{false, true} {
						body := `{"prompt": "Once upon a time", `
						if path == "/v1/chat/completions" {
							body = `{"messages": [{"role": "user", "content": "Once upon a time"}], `
						}
						body += tc.fields + `, "temperature": 1, "seed": ` + strconv.Itoa(seed) + `, "stream": ` + boolText(stream) + "}"
						if !strings.Contains(tc.fields, "max_tokens") {
							body = strings.Replace(body, "{", `{"max_tokens": 200, `, 1)
						}
						text, finish := completeText(t, h, path, body)
						tc.check(t, text)
						// Whole, also when steered to end at a tight limit,
						// which may then be what ended it.
						if strings.Contains(tc.fields, "max_tokens") {
							assert.Contains(t, []string{"stop", "length"}, finish, "%s %s: %q", path, body, text)
						} else {
							assert.Equal(t, "stop", finish, "%s %s: %q", path, body, text)
						}
					}
				}
			}
		})
	}
}

// completeText sends a completion request and returns its text and finish
// reason, streamed or not.
// TestGrammarFinishReason: a reply under a grammar that max_tokens ends
// says "length" on every endpoint, streamed or not, though its text is a
// whole match the grammar would have let go on ([a-z]+ after five tokens,
// an integer after one); /v1/responses says "incomplete" with
// "max_output_tokens". Without a grammar, the same.
func TestGrammarFinishReason(t *testing.T) {
	h := newHandler(t, Options{})
	for _, grammar := range []string{`, "grammar": "root ::= [a-z]+"`, ""} {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
			for _, stream := range []bool{false, true} {
				body := `{"prompt": "Hi", `
				if path == "/v1/chat/completions" {
					body = `{"messages": [{"role": "user", "content": "Hi"}], `
				}
				body += `"max_tokens": 5, "temperature": 0, "stream": ` + boolText(stream) + grammar + `}`
				text, finish := completeText(t, h, path, body)
				assert.Equal(t, "length", finish, "%s %s: %q", path, body, text)
				if grammar != "" {
					assert.Regexp(t, `^[a-z]+$`, text, body)
				}
			}
		}
	}
	w := do(h, "POST", "/v1/responses", `{"input": "Hi", "max_output_tokens": 1, "temperature": 0,
		"text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "integer"}}}}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var r responseBody
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	assert.Regexp(t, `^-?[0-9]$`, r.OutputText)
	assert.Equal(t, "incomplete", r.Status)
	require.NotNil(t, r.IncompleteDetails)
	assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
}

func completeText(t *testing.T, h http.Handler, path, body string) (text, finish string) {
	t.Helper()
	w := do(h, "POST", path, body)
	require.Equal(t, http.StatusOK, w.Code, "%s: %s", body, w.Body.String())
	if !strings.Contains(body, `"stream": true`) {
		c := decodeCompletion(t, w)
		return c.text(t), c.Choices[0].FinishReason
	}
	var b strings.Builder
	for _, e := range parseSSE(t, w.Body.String()) {
		if e.data == "[DONE]" {
			break
		}
		var c streamChunk
		require.NoError(t, json.Unmarshal([]byte(e.data), &c), e.data)
		if len(c.Choices) == 0 {
			continue
		}
		ch := c.Choices[0]
		if ch.Text != nil {
			b.WriteString(*ch.Text)
		}
		if ch.Delta != nil && ch.Delta.Content != nil {
			b.WriteString(*ch.Delta.Content)
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
	}
	return b.String(), finish
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
