package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// minjaPolyfills is testdata/minja_polyfills.json, minja's expected outputs
// for a ChatML template that knows nothing of tools.
type minjaPolyfills struct {
	Tool          openAITool `json:"special_function_tool"`
	ToolsPolyfill struct {
		Messages []openAIMessage `json:"messages"`
		Expected string          `json:"expected"`
	} `json:"tools_polyfill"`
	ToolCallPolyfill struct {
		Messages []openAIMessage `json:"messages"`
		Expected string          `json:"expected"`
	} `json:"tool_call_polyfill"`
}

// TestGenericFormatMinja: the generic format writes the tools, the example
// call and an earlier call as minja's polyfills do, with the sentence
// llama.cpp's generic handler adds before them.
func TestGenericFormatMinja(t *testing.T) {
	ref := readTestJSON[minjaPolyfills](t, "minja_polyfills.json")
	// A ChatML template without <tool_call>: the generic format.
	chatml := Template{f: families["chatml"], tools: ToolFormatGeneric}

	got, err := chatml.ApplyWith(messagesFrom(t, ref.ToolsPolyfill.Messages), true,
		Options{Tools: toolsFrom(t, []openAITool{ref.Tool})})
	require.NoError(t, err)
	want := strings.Replace(ref.ToolsPolyfill.Expected, "<|im_start|>system\n",
		"<|im_start|>system\n"+genericRespond+"\n\n", 1)
	assert.Equal(t, want, got)

	got, err = chatml.ApplyWith(messagesFrom(t, ref.ToolCallPolyfill.Messages), true, Options{})
	require.NoError(t, err)
	assert.Equal(t, ref.ToolCallPolyfill.Expected, got)
}
