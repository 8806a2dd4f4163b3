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
