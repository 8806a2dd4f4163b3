package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPatternSurrogatePair: a pattern's escaped UTF-16 surrogate pair is
// the one character it encodes, which the model writes in UTF-8 (the
// default model's byte-fallback tokens spell it): greedy, the reply is
// that character, on both endpoints, streamed or not.
func TestPatternSurrogatePair(t *testing.T) {
	h := newHandler(t, Options{})
	format := `"response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "string", "pattern": "^\\uD83D\\uDE00$"}}}`
	for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
		for _, stream := range []bool{false, true} {
			body := `{"prompt": "Once", `
			if path == "/v1/chat/completions" {
				body = `{"messages": [{"role": "user", "content": "Once"}], `
			}
			body += format + `, "max_tokens": 16, "temperature": 0, "stream": ` + boolText(stream) + `}`
			text, finish := completeText(t, h, path, body)
			require.Equal(t, `"😀"`, text, "%s %s", path, body)
			require.Equal(t, "stop", finish, "%s %s", path, body)
		}
	}
}
