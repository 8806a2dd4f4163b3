package openai

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// chatJob is the job of a chat request body, which must be valid.
func chatJob(t *testing.T, a *API, body string) *Job {
	t.Helper()
	req := ChatRequest{SamplingRequest: a.NewSamplingRequest()}
	require.Nil(t, Decode([]byte(body), &req))
	j, e := a.ChatJob(&req)
	require.Nil(t, e)
	return j
}

// TestReplyStartRequests: a final assistant message with prefix: true is
// the reply's beginning — the prompt ends with its tokens, the reply is
// read after it — and a JSON response_format holds the whole reply, so a
// beginning it cannot continue is refused; prefix anywhere else is refused
// naming the message.
func TestReplyStartRequests(t *testing.T) {
	a := newAPI(t)
	without := chatJob(t, a, `{"messages": [{"role": "user", "content": "Once upon a time"}]}`)
	with := chatJob(t, a, `{"messages": [{"role": "user", "content": "Once upon a time"}, {"role": "assistant", "content": "there was", "prefix": true}]}`)
	ids, err := a.Model.Tokenizer().Encode("there was", tokenizer.EncodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, append(append([]int{}, without.Prompt.Tokens...), ids...), with.Prompt.Tokens, "the prompt ends with the beginning's tokens")
	assert.Equal(t, without.ReplyPrefix+"there was", with.ReplyPrefix)

	user := `{"role": "user", "content": "Tell me"}`
	schema := `, "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}`
	for _, tc := range []struct {
		name, body, param string // param: of the error, "" when valid
	}{
		{"a beginning the schema continues", `{"messages": [` + user + `, {"role": "assistant", "content": "{\"name\": \"", "prefix": true}]` + schema + `}`, ""},
		{"a beginning the schema refuses", `{"messages": [` + user + `, {"role": "assistant", "content": "[", "prefix": true}]` + schema + `}`, "messages[1].content"},
		{"a beginning a grammar refuses", `{"messages": [` + user + `, {"role": "assistant", "content": "no", "prefix": true}], "grammar": "root ::= \"yes\""}`, "messages[1].content"},
		{"not the last message", `{"messages": [{"role": "assistant", "content": "a", "prefix": true}, ` + user + `]}`, "messages[0].prefix"},
		{"a user message", `{"messages": [{"role": "user", "content": "a", "prefix": true}]}`, "messages[0].prefix"},
		{"alone", `{"messages": [{"role": "assistant", "content": "a", "prefix": true}]}`, "messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := jobError(a, "/v1/chat/completions", tc.body)
			if tc.param == "" {
				assert.Nil(t, e)
				return
			}
			require.NotNil(t, e)
			assert.Equal(t, tc.param, e.Param, e.Message)
		})
	}
}

// TestReplyStartGenerates: a reply given its beginning under a JSON schema
// is the beginning and its continuation, JSON the schema allows, whole and
// streamed alike.
func TestReplyStartGenerates(t *testing.T) {
	a := newAPI(t)
	j := chatJob(t, a, `{"messages": [{"role": "user", "content": "Tell me"}, {"role": "assistant", "content": "{\"name\": \"Li", "prefix": true}],
		"temperature": 0, "max_tokens": 40, "response_format": {"type": "json_schema", "json_schema": {"name": "n",
		"schema": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}}, "required": ["name"], "additionalProperties": false}}}}`)
	s, err := a.Model.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	stream := NewReplyStream(j.Calls, j.ReplyPrefix)
	var streamed strings.Builder
	res, err := s.GeneratePrompt(context.Background(), j.Prompt, j.Options, func(tok engine.Token) error {
		_, content := stream.Write(tok.Text)
		streamed.WriteString(content)
		return nil
	})
	require.NoError(t, err)
	_, content, rest, _ := stream.Finish(res.FinishReason)
	streamed.WriteString(content + rest)
	c := NewCompletion("id", 0, "m", true, j.Calls, j.ReplyPrefix, res, 0)
	whole := *c.Choices.([]ChatChoice)[0].Message.Content
	assert.Equal(t, whole, streamed.String(), "streamed as whole")
	require.True(t, strings.HasPrefix(whole, `{"name": "Li`), whole)
	var v struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(whole), &v), whole)
	assert.True(t, strings.HasPrefix(v.Name, "Li"), v.Name)
}
