package chat

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolOptions: the tools and tool_choice are checked, tool_choice none
// keeps the tools out of the prompt, a named function is the only tool
// described, and a tool result needs the id of its call.
func TestToolOptions(t *testing.T) {
	chatml, err := Named("chatml")
	require.NoError(t, err)
	user := []Message{{Role: "user", Content: "hi"}}
	weather := Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object"}`)}
	clock := Tool{Name: "get_time", Description: "now"}
	plain, err := chatml.Apply(user, true)
	require.NoError(t, err)

	for _, bad := range [][]Tool{
		{{Name: ""}}, {{Name: "a b"}}, {weather, weather},
		{{Name: "f", Parameters: json.RawMessage(`[1]`)}}, {{Name: "f", Parameters: json.RawMessage(`{`)}},
	} {
		_, err := chatml.ApplyWith(user, true, Options{Tools: bad})
		require.ErrorIs(t, err, ErrInvalidTool, "%+v", bad)
	}
	_, err = chatml.ApplyWith(user, true, Options{Tools: []Tool{weather}, ToolChoice: ToolChoice{Mode: ToolFunction, Function: "get_time"}})
	require.ErrorIs(t, err, ErrInvalidTool)
	_, err = chatml.ApplyWith(user, true, Options{ToolChoice: ToolChoice{Mode: ToolRequired}})
	require.ErrorIs(t, err, ErrInvalidTool)

	none, err := chatml.ApplyWith(user, true, Options{Tools: []Tool{weather}, ToolChoice: ToolChoice{Mode: ToolNone}})
	require.NoError(t, err)
	assert.Equal(t, plain, none)

	named, err := chatml.ApplyWith(user, true, Options{Tools: []Tool{weather, clock}, ToolChoice: ToolChoice{Mode: ToolFunction, Function: "get_time"}})
	require.NoError(t, err)
	assert.Contains(t, named, `"get_time"`)
	assert.NotContains(t, named, `"get_weather"`)

	_, err = chatml.Apply([]Message{{Role: "tool", Content: "42"}}, true)
	require.ErrorIs(t, err, ErrUnknownRole)
	got, err := chatml.Apply([]Message{{Role: "tool", Content: "42", ToolCallID: "c"}}, true)
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n", got)
}

// TestToolFormats: each family's tool format from Named, and Detect's
// choice for templates that do not know tools.
func TestToolFormats(t *testing.T) {
	for _, name := range Names() {
		tmpl, err := Named(name)
		require.NoError(t, err)
		want, ok := familyToolFormats[name]
		if !ok {
			want = ToolFormatGeneric
		}
		assert.Equal(t, want, tmpl.ToolFormat(), name)
	}
	assert.Equal(t, ToolFormat(0), Template{}.ToolFormat())
	// A ChatML template without <tool_call> (OpenHermes-2.5) is generic;
	// the name "chatml" is the family's default.
	src := "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
	tmpl, err := Detect(src)
	require.NoError(t, err)
	assert.Equal(t, ToolFormatGeneric, tmpl.ToolFormat())
	tmpl, err = Detect("chatml")
	require.NoError(t, err)
	assert.Equal(t, ToolFormatHermes, tmpl.ToolFormat())
	assert.Equal(t, "mistral", ToolFormatMistral.String())
}
