package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cutCases are whole replies of every tool format, each some text (before)
// and then one call, as the formats' templates and llama.cpp's tests write
// them; TestCutToolCallNeverLeaksMarkup cuts each at every byte.
var cutCases = []struct {
	format ToolFormat
	before string
	call   string
}{
	{ToolFormatGeneric, "", `{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`},
	{ToolFormatGeneric, "", `{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], "content": "Checking."}`},
	{ToolFormatLlama3, "", `{"name": "get_weather", "parameters": {"city": "Paris"}}`},
	{ToolFormatLlama3, "", `<|python_tag|>{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}`},
	{ToolFormatHermes, "Let me check.\n", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
	{ToolFormatHermes, "", `<tool_call>{"name":"get_weather","arguments":{}}</tool_call>`},
	{ToolFormatMistral, "Let me check.", `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}]`},
	{ToolFormatQwenXML, "Let me check.\n\n", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"},
	{ToolFormatHarmony, "", `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>`},
	{ToolFormatHarmony, "", ` to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>`},
	{ToolFormatLFM2, "Checking.", `<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>`},
	{ToolFormatGemma4, "Checking.", `<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>`},
}

// TestCutToolCallNeverLeaksMarkup: a reply cut at any byte of its call
// (a token limit, a full context) has as content the text before the call
// (less the whitespace a call removes) and either no call or the whole
// call; its markup never reaches the content. A ToolCallStream fed the cut
// reply byte by byte and ended with FinishCut gives the same, and so
// streams none of it either. The whole reply parses as ParseToolCallsFor
// reads it.
func TestCutToolCallNeverLeaksMarkup(t *testing.T) {
	const seed = 5
	for _, c := range cutCases {
		t.Run(c.format.String()+"/"+c.call[:min(24, len(c.call))], func(t *testing.T) {
			full := c.before + c.call
			wantContent, wantCalls, err := ParseToolCallsFor(c.format, full, seed, nil)
			require.NoError(t, err)
			require.Len(t, wantCalls, 1, "the case's call parses")
			require.Equal(t, "get_weather", wantCalls[0].Name)
			for i := 0; i <= len(full); i++ {
				cut := full[:i]
				content, calls, err := ParseCutToolCallsFor(c.format, cut, seed, nil)
				require.NoError(t, err)
				switch {
				case i == len(full):
					require.Equal(t, wantContent, content)
					require.Equal(t, wantCalls, calls)
				case i <= len(c.before):
					require.True(t, strings.HasPrefix(c.before, content), "cut at %d: content %q", i, content)
					require.Empty(t, calls, "cut at %d", i)
				default:
					require.Equal(t, trimRightSpace(c.before), content, "cut at %d (%q)", i, cut)
					if len(calls) > 0 {
						require.Equal(t, wantCalls, calls, "cut at %d: only a whole call", i)
					}
				}
				s := NewToolCallStreamFor(c.format, seed, nil)
				var streamed strings.Builder
				for j := range len(cut) {
					streamed.WriteString(s.Write(cut[j : j+1]))
				}
				rest, streamCalls := s.FinishCut()
				require.Equal(t, content, streamed.String()+rest, "cut at %d, streamed", i)
				require.Equal(t, calls, streamCalls, "cut at %d, streamed", i)
			}
		})
	}
}

// TestCutToolCallKeepsText: a cut reply with no call in it is all content
// (but for a trailing part of a call's opening), and a whole generic
// {"response": ...} stays its text.
func TestCutToolCallKeepsText(t *testing.T) {
	for _, c := range []struct {
		format        ToolFormat
		text, content string
	}{
		{ToolFormatHermes, "Once upon a time", "Once upon a time"},
		{ToolFormatHermes, "Once upon a <tool", "Once upon a"},
		{ToolFormatLlama3, "Once upon a time {", "Once upon a time {"},
		{ToolFormatGeneric, `{"response": "{a} b"}`, "{a} b"},
		{ToolFormatGeneric, `{"response": "Once upon`, ""},
		{ToolFormatMistral, "Once [TOOL", "Once"},
	} {
		content, calls, err := ParseCutToolCallsFor(c.format, c.text, 1, nil)
		require.NoError(t, err)
		require.Equal(t, c.content, content, "%v %q", c.format, c.text)
		require.Empty(t, calls)
	}
}
