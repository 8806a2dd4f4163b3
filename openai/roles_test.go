package openai

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/policy"
)

// TestDeveloperRoleIsSystem: a "developer" message makes the prompt a
// "system" message in its place makes, wherever it stands, in the default
// model's plain template and in ChatML (a template that writes the role).
func TestDeveloperRoleIsSystem(t *testing.T) {
	file, err := modelgen.SetKV(models.Default(), "tokenizer.chat_template", gguf.ValueOf("{{'<|im_start|>' + message['role']}}"))
	require.NoError(t, err)
	chatml, err := engine.LoadGGUF(file)
	require.NoError(t, err)
	for _, a := range []*API{newAPI(t), {Model: chatml, Grammars: policy.NewGrammars(chatml), Context: 512, MaxTokens: 512}} {
		for _, msgs := range []string{
			`[{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}]`,
			`[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "developer", "content": "Be brief."}, {"role": "user", "content": "again"}]`,
			`[{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]}, {"role": "user", "content": "hi"}]`,
		} {
			prompt := func(m string) []int {
				req := ChatRequest{SamplingRequest: a.NewSamplingRequest()}
				require.Nil(t, Decode([]byte(`{"messages": `+m+`}`), &req))
				j, e := a.ChatJob(&req)
				require.Nil(t, e, m)
				return j.Prompt.Tokens
			}
			require.Equal(t, prompt(strings.ReplaceAll(msgs, `"developer"`, `"system"`)), prompt(msgs), msgs)
		}
	}
}

// TestUnknownRoleNamesDeveloper: a role no template takes is refused with
// the roles the request may use, developer among them (read as system).
func TestUnknownRoleNamesDeveloper(t *testing.T) {
	a := newAPI(t)
	req := ChatRequest{SamplingRequest: a.NewSamplingRequest()}
	require.Nil(t, Decode([]byte(`{"messages": [{"role": "critic", "content": "hi"}]}`), &req))
	_, e := a.ChatJob(&req)
	require.NotNil(t, e)
	require.Equal(t, "messages", e.Param)
	require.Contains(t, e.Message, `role "critic"; template plain takes system, developer, user, assistant, tool`)
	req = ChatRequest{SamplingRequest: a.NewSamplingRequest()}
	require.Nil(t, Decode([]byte(`{"messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}]}`), &req))
	_, e = a.ChatJob(&req)
	require.Nil(t, e, "developer is taken")
}

// TestResponsesTooLongInput: a /v1/responses input with no room left for a
// reply is refused naming input, in a sentence that agrees with it.
func TestResponsesTooLongInput(t *testing.T) {
	a := newAPI(t)
	var req ResponsesRequest
	require.Nil(t, Decode([]byte(`{"input": "`+strings.Repeat("many words here ", a.Context)+`"}`), &req))
	_, e := a.ResponsesJob(&req)
	require.NotNil(t, e)
	require.Equal(t, "input", e.Param)
	require.Equal(t, "context_length_exceeded", e.Code)
	require.Contains(t, e.Message, "maximum context length is 512 tokens, and the input is ")
	require.NotContains(t, e.Message, "messages")
}
