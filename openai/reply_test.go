package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// The replies of httpapi's tests of reasoning and tool calls, their
// tokens' texts as a scripted generation sends them.
var (
	// A Qwen3 reply whose tags arrive split across tokens (and a token
	// holding the end of the reasoning and the start of the content).
	splitReply = []string{"<th", "ink>\nI", " should", " greet. ", "</thi", "nk>\n\nHel", "lo", "!"}
	// A reply in the generic tool format making two calls.
	genericCalls = []string{`{"tool_ca`, `lls": [{"name": "get_`, `weather", "arguments": {"city": "Pa`, `ris"}}, `,
		`{"name": "get_time", "arguments": {}}]}`}
	// A Hermes reply that thinks, then calls.
	hermesThinking = []string{"<think>\nThe user", " wants the time.\n</think>\n\n<tool_", "call>\n{\"name\": \"get_time\", ", "\"arguments\": {}}\n</tool_call>"}
)

// TestReply: a reply's reasoning, content and calls, whole (ParseReply) and
// streamed token by token (ReplyStream): the pieces as they are released,
// joined, and the calls are the whole reply's, ids included.
func TestReply(t *testing.T) {
	const seed = 7
	generic := &Calls{Format: chat.ToolFormatGeneric, Seed: seed, Parallel: true}
	tests := []struct {
		name      string
		tokens    []string
		prefix    string // the job's ReplyPrefix
		calls     *Calls
		reasoning []string // the reasoning pieces as streamed
		content   []string // the content pieces as streamed
		want      Reply
	}{
		{"reasoning split across tokens", splitReply, "", nil,
			[]string{"I", " should", " greet."}, []string{"Hel", "lo", "!"},
			Reply{Reasoning: "I should greet.", Content: "Hello!"}},
		{"no reasoning at the start: all content", []string{"Once", " upon <think>"}, "", nil,
			nil, []string{"Once", " upon <think>"},
			Reply{Content: "Once upon <think>"}},
		{"two generic calls", genericCalls, "", generic, nil, nil,
			Reply{ToolCalls: []chat.ToolCall{
				{ID: chat.ToolCallID(chat.ToolFormatGeneric, seed, 0), Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: chat.ToolCallID(chat.ToolFormatGeneric, seed, 1), Name: "get_time", Arguments: `{}`}}}},
		{"parallel_tool_calls false: the first call", genericCalls, "", &Calls{Format: chat.ToolFormatGeneric, Seed: seed}, nil, nil,
			Reply{ToolCalls: []chat.ToolCall{
				{ID: chat.ToolCallID(chat.ToolFormatGeneric, seed, 0), Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
		{"text where calls may come", []string{"It is ", "sunny."}, "", generic, nil, []string{"It is ", "sunny."},
			Reply{Content: "It is sunny."}},
		{"thinking, then a Hermes call", hermesThinking, "", &Calls{Format: chat.ToolFormatHermes, Seed: seed, Parallel: true},
			[]string{"The user", " wants the time."}, nil,
			Reply{Reasoning: "The user wants the time.", ToolCalls: []chat.ToolCall{
				{ID: chat.ToolCallID(chat.ToolFormatHermes, seed, 0), Name: "get_time", Arguments: `{}`}}}},
		// Qwen3.5: reasoning from the prompt's open think block, then an
		// XML call whose values the tools' schemas type (a string stays
		// one though it reads as a number).
		{"Qwen3.5's XML call, typed by the tools", []string{"Time?", "\n</think>\n\n<tool_", "call>\n<function=set", "_alarm>\n<parameter=label>\n42\n</parameter>\n",
			"<parameter=hour>\n7\n</parameter>\n</function>\n</tool_call>"}, "<think>\n",
			&Calls{Format: chat.ToolFormatQwenXML, Seed: seed, Tools: []chat.Tool{{Name: "set_alarm", Parameters: json.RawMessage(
				`{"type": "object", "properties": {"label": {"type": "string"}, "hour": {"type": "integer"}}}`)}}},
			[]string{"Time?"}, nil,
			Reply{Reasoning: "Time?", ToolCalls: []chat.ToolCall{
				{ID: chat.ToolCallID(chat.ToolFormatQwenXML, seed, 0), Name: "set_alarm", Arguments: `{"label":"42","hour":7}`}}}},
		// Qwen3.5's prompt ends inside a think block: the reply starts in
		// its reasoning.
		{"a prompt that ends inside the reasoning", []string{"I", " should greet.\n", "</think>\n\n", "Hello!"}, "<think>\n", nil,
			[]string{"I", " should greet."}, []string{"Hello!"},
			Reply{Reasoning: "I should greet.", Content: "Hello!"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkReply(t, tt.tokens, tt.prefix, tt.calls, engine.FinishStop, tt.reasoning, tt.content, tt.want)
		})
	}
}

// TestReplyCutOff: a reply whose generation was cut off (the token limit,
// a full context) keeps the calls it completed and drops a call it left
// unfinished, whose markup is neither streamed nor in the content.
func TestReplyCutOff(t *testing.T) {
	const seed = 7
	generic := &Calls{Format: chat.ToolFormatGeneric, Seed: seed, Parallel: true}
	hermes := &Calls{Format: chat.ToolFormatHermes, Seed: seed}
	tests := []struct {
		name      string
		tokens    []string
		calls     *Calls
		end       engine.FinishReason
		reasoning []string // the reasoning pieces as streamed
		content   []string // the content pieces as streamed
		want      Reply
	}{
		{"a Hermes call cut by the token limit", []string{"Sure.", " <tool_", "call>\n{\"name\": \"get_time\", ", "\"arguments\": {}}\n</to"},
			hermes, engine.FinishLength, nil, []string{"Sure."}, Reply{Content: "Sure."}},
		{"a generic call cut by a full context", genericCalls[:3], generic, engine.FinishContext, nil, nil, Reply{}},
		{"a whole call, then the token limit", hermesThinking, hermes, engine.FinishLength,
			[]string{"The user", " wants the time."}, nil,
			Reply{Reasoning: "The user wants the time.", ToolCalls: []chat.ToolCall{
				{ID: chat.ToolCallID(chat.ToolFormatHermes, seed, 0), Name: "get_time", Arguments: `{}`}}}},
		{"text, then the token limit", []string{"It is ", "sun"}, generic, engine.FinishLength, nil, []string{"It is ", "sun"},
			Reply{Content: "It is sun"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkReply(t, tt.tokens, "", tt.calls, tt.end, tt.reasoning, tt.content, tt.want)
		})
	}
}

// checkReply checks a reply of tokens after prefix, read for calls, whose
// generation ended with end: whole (ParseReply) it is want; streamed token
// by token (ReplyStream), its pieces as they are released are reasoning
// and content, and its calls want's.
func checkReply(t *testing.T, tokens []string, prefix string, calls *Calls, end engine.FinishReason, reasoning, content []string, want Reply) {
	t.Helper()
	got, err := ParseReply(prefix+strings.Join(tokens, ""), calls, end)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	s := NewReplyStream(calls, prefix)
	var gotReasoning, gotContent []string
	add := func(r, c string) {
		if r != "" {
			gotReasoning = append(gotReasoning, r)
		}
		if c != "" {
			gotContent = append(gotContent, c)
		}
	}
	for _, tok := range tokens {
		add(s.Write(tok))
	}
	r, c, rest, gotCalls := s.Finish(end)
	add(r, c)
	add("", rest)
	assert.Equal(t, reasoning, gotReasoning)
	assert.Equal(t, content, gotContent)
	assert.Equal(t, want.ToolCalls, gotCalls)
}

// TestCallSeed: the same seed and prompt give the same ids; the next turn
// of a conversation (a longer prompt) or another seed, new ones.
func TestCallSeed(t *testing.T) {
	prompt := []int{1, 403, 407}
	assert.Equal(t, CallSeed(3, prompt), CallSeed(3, prompt))
	assert.NotEqual(t, CallSeed(3, prompt), CallSeed(3, append(prompt, 9)))
	assert.NotEqual(t, CallSeed(3, prompt), CallSeed(4, prompt))
}
