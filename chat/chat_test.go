package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reference is testdata/llamacpp_chat_templates.json: llama.cpp's
// tests/test-chat-template.cpp cases (see testdata/README.md).
type reference struct {
	Conversation        []jsonMessage `json:"conversation"`
	AddGenerationPrompt bool          `json:"add_generation_prompt"`
	InvalidTemplate     string        `json:"invalid_template"`
	Cases               []struct {
		Name           string `json:"name"`
		Family         string `json:"family"`
		Template       string `json:"template"`
		ExpectedOutput string `json:"expected_output"`
	} `json:"cases"`
	FormatSingleSystem formatSingleSet `json:"format_single_system"`
	FormatSingleUser   formatSingleSet `json:"format_single_user"`
}

type jsonMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// formatSingleSet is one group of llama.cpp's common_chat_format_single
// assertions: the text one new message adds after a formatted history.
type formatSingleSet struct {
	Past     []jsonMessage `json:"past"`
	New      jsonMessage   `json:"new"`
	AddAss   bool          `json:"add_ass"`
	Expected []struct {
		Template string `json:"template"`
		Expected string `json:"expected"`
	} `json:"expected"`
}

func messages(in []jsonMessage) []Message {
	out := make([]Message, len(in))
	for i, m := range in {
		out[i] = Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// readTestJSON decodes testdata/name into a T.
func readTestJSON[T any](t *testing.T, name string) T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var v T
	require.NoError(t, json.Unmarshal(data, &v))
	return v
}

func loadReference(t *testing.T) reference {
	t.Helper()
	ref := readTestJSON[reference](t, "llamacpp_chat_templates.json")
	require.NotEmpty(t, ref.Cases)
	require.Len(t, ref.Conversation, 6)
	return ref
}

// TestLlamaCppReference checks, for every template in llama.cpp's
// test-chat-template.cpp, that Detect picks the family llama.cpp's detector
// picks and that Apply reproduces llama.cpp's expected output byte for byte.
func TestLlamaCppReference(t *testing.T) {
	ref := loadReference(t)
	conv := messages(ref.Conversation)
	for _, tc := range ref.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			tmpl, err := Detect(tc.Template)
			require.NoError(t, err)
			assert.Equal(t, tc.Family, tmpl.Name())
			got, err := tmpl.Apply(conv, ref.AddGenerationPrompt)
			require.NoError(t, err)
			assert.Equal(t, tc.ExpectedOutput, got)
		})
	}
}

// TestLlamaCppInvalidTemplate: llama.cpp's test asserts that "INVALID
// TEMPLATE" is rejected.
func TestLlamaCppInvalidTemplate(t *testing.T) {
	ref := loadReference(t)
	_, err := Detect(ref.InvalidTemplate)
	require.ErrorIs(t, err, ErrUnknownTemplate)
}

// formatSingle is llama.cpp's common_chat_format_single on the legacy
// (non-Jinja) path: format the history without the assistant opening, format
// history+msg, and return the difference, keeping the history's trailing
// newline when the new turn asks for an assistant opening.
func formatSingle(t *testing.T, tmpl Template, past []Message, msg Message, addAss bool) string {
	t.Helper()
	fmtPast := ""
	if len(past) > 0 {
		var err error
		fmtPast, err = tmpl.Apply(past, false)
		require.NoError(t, err)
	}
	prefix := ""
	if addAss && strings.HasSuffix(fmtPast, "\n") {
		prefix = "\n"
	}
	fmtNew, err := tmpl.Apply(append(append([]Message(nil), past...), msg), addAss)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(fmtNew, fmtPast), "history must be a prefix")
	return prefix + fmtNew[len(fmtPast):]
}

// TestLlamaCppFormatSingle reproduces llama.cpp's fmt_sys / fmt_single
// assertions, which cover a lone system message (gemma drops it: it has no
// system slot and no user turn follows), addAssistant=false, templates
// chosen by name, and "mistral" (not a name; picked up by the "mistral"
// prefix rule as llama2).
func TestLlamaCppFormatSingle(t *testing.T) {
	ref := loadReference(t)
	for _, set := range []formatSingleSet{ref.FormatSingleSystem, ref.FormatSingleUser} {
		require.NotEmpty(t, set.Expected)
		for _, e := range set.Expected {
			t.Run(set.New.Role+"/"+e.Template, func(t *testing.T) {
				tmpl, err := Detect(e.Template)
				require.NoError(t, err)
				got := formatSingle(t, tmpl, messages(set.Past), messages([]jsonMessage{set.New})[0], set.AddAss)
				assert.Equal(t, e.Expected, got)
			})
		}
	}
}

// TestZephyr: llama.cpp's tests have no zephyr case. llama.cpp writes zephyr
// exactly like phi3 with "<|endoftext|>" in place of "<|end|>" (both are
// "<|role|>\n" + content + end + "\n", then "<|assistant|>\n"), so the
// expected output is llama.cpp's Phi-3 reference output with that one
// substitution.
func TestZephyr(t *testing.T) {
	ref := loadReference(t)
	var phi3 string
	for _, tc := range ref.Cases {
		if tc.Family == "phi3" {
			phi3 = tc.ExpectedOutput
			break
		}
	}
	require.NotEmpty(t, phi3)
	want := strings.ReplaceAll(phi3, "<|end|>", "<|endoftext|>")

	tmpl, err := Named("zephyr")
	require.NoError(t, err)
	got, err := tmpl.Apply(messages(ref.Conversation), true)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"<|endoftext|>"}, tmpl.Stop())
}

func TestPlain(t *testing.T) {
	tmpl, err := Named("plain")
	require.NoError(t, err)
	assert.Equal(t, "plain", tmpl.Name())
	assert.Empty(t, tmpl.Stop())
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Once upon a time"},
		{Role: "assistant", Content: " there was"},
		{Role: "user", Content: ""},
	}
	want := "Be brief.\nOnce upon a time\n there was\n" // contents joined by "\n"
	for _, add := range []bool{false, true} {
		got, err := tmpl.Apply(msgs, add)
		require.NoError(t, err)
		assert.Equal(t, want, got, "addAssistant=%v appends nothing", add)
	}
	got, err := tmpl.Apply(msgs[1:2], true)
	require.NoError(t, err)
	assert.Equal(t, "Once upon a time", got)
	_, err = Detect("plain")
	require.ErrorIs(t, err, ErrUnknownTemplate, "plain is ours, never detected")
}

func TestNamedAndNames(t *testing.T) {
	names := Names()
	for _, want := range []string{"chatml", "llama2", "llama2-sys", "llama3", "mistral-v1", "mistral-v3",
		"mistral-v7", "zephyr", "phi3", "gemma", "plain"} {
		assert.Contains(t, names, want)
	}
	assert.IsNonDecreasing(t, names)
	for _, name := range names {
		tmpl, err := Named(name)
		require.NoError(t, err, name)
		assert.Equal(t, name, tmpl.Name())
		if !slices.Contains([]string{"plain", "qwen3", "qwen35", "lfm2", "gemma4"}, name) {
			// Every llama.cpp family is reachable from Detect by its name too
			// (plain, qwen3, qwen35, lfm2 and gemma4 are ours, not llama.cpp's
			// names).
			det, err := Detect(name)
			require.NoError(t, err, name)
			assert.Equal(t, name, det.Name())
		}
	}

	_, err := Named("no-such-template")
	require.ErrorIs(t, err, ErrUnknownTemplate)
	assert.Contains(t, err.Error(), "no-such-template")
	// A llama.cpp name we do not implement says so.
	_, err = Named("llama4")
	require.ErrorIs(t, err, ErrUnknownTemplate)
	assert.Contains(t, err.Error(), "not implemented")
}

func TestApplyErrors(t *testing.T) {
	chatml, err := Named("chatml")
	require.NoError(t, err)

	t.Run("zero template", func(t *testing.T) {
		var zero Template
		assert.Empty(t, zero.Name())
		assert.Empty(t, zero.Stop())
		_, err := zero.Apply([]Message{{Role: "user", Content: "hi"}}, true)
		require.ErrorIs(t, err, ErrUnknownTemplate)
	})
	t.Run("no messages", func(t *testing.T) {
		for _, name := range Names() {
			tmpl, err := Named(name)
			require.NoError(t, err)
			_, err = tmpl.Apply(nil, true)
			require.ErrorIs(t, err, ErrNoMessages, name)
			_, err = tmpl.Apply([]Message{}, false)
			require.ErrorIs(t, err, ErrNoMessages, name)
		}
	})
	t.Run("unknown role", func(t *testing.T) {
		msgs := []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}, {Role: "tool", Content: "42"}}
		for _, name := range Names() {
			tmpl, err := Named(name)
			require.NoError(t, err)
			_, err = tmpl.Apply(msgs, true)
			require.ErrorIs(t, err, ErrUnknownRole, name)
			assert.Contains(t, err.Error(), `"tool"`)
			assert.Contains(t, err.Error(), "message 2")
		}
		_, err := chatml.Apply([]Message{{Role: "User", Content: "hi"}}, true)
		require.ErrorIs(t, err, ErrUnknownRole, "roles are case-sensitive")
		_, err = chatml.Apply([]Message{{Role: "", Content: "hi"}}, true)
		require.ErrorIs(t, err, ErrUnknownRole)
	})
	t.Run("granite's own roles", func(t *testing.T) {
		granite, err := Named("granite")
		require.NoError(t, err)
		got, err := granite.Apply([]Message{
			{Role: "user", Content: "q"},
			{Role: "assistant_tool_call", Content: "call"},
			{Role: "tool_response", Content: "r"},
		}, false)
		require.NoError(t, err)
		// Shape from llama.cpp's granite branch: role header, <|tool_call|> for tool calls.
		assert.Equal(t, "<|start_of_role|>user<|end_of_role|>q<|end_of_text|>\n"+
			"<|start_of_role|>assistant_tool_call<|end_of_role|><|tool_call|>call<|end_of_text|>\n"+
			"<|start_of_role|>tool_response<|end_of_role|>r<|end_of_text|>\n", got)
		_, err = chatml.Apply([]Message{{Role: "tool_response", Content: "r"}}, false)
		require.ErrorIs(t, err, ErrUnknownRole, "only granite defines tool_response")
	})
}

// TestStopFollowsAssistantTurn: the first stop string is what the format
// writes after an assistant message (ignoring the newlines deepseek puts
// before its marker), so a generation stopped there ends the turn the way the
// template would. Formats with no end marker (chatglm, minicpm, bailing) end
// a turn with the next turn's opening, which is their stop string. gpt-oss's
// harmony format is the exception: a turn of the history ends with <|end|>,
// which also ends the reasoning of a reply, so a reply stops only at
// <|return|> or <|call|>, which the history never holds.
func TestStopFollowsAssistantTurn(t *testing.T) {
	const reply = "zq-reply"
	msgs := []Message{
		{Role: "user", Content: "hello"},
		{Role: "assistant", Content: reply},
		{Role: "user", Content: "more"},
	}
	for _, name := range Names() {
		if name == "plain" || name == "gpt-oss" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tmpl, err := Named(name)
			require.NoError(t, err)
			stop := tmpl.Stop()
			require.NotEmpty(t, stop)
			out, err := tmpl.Apply(msgs, true)
			require.NoError(t, err)
			i := strings.Index(out, reply)
			require.GreaterOrEqual(t, i, 0)
			after := out[i+len(reply):]
			ok := strings.HasPrefix(after, stop[0]) || strings.HasPrefix(strings.TrimLeft(after, "\n"), stop[0])
			assert.True(t, ok, "after reply: %q, stop: %q", after, stop[0])

			stop[0] = "mutated"
			assert.NotEqual(t, "mutated", tmpl.Stop()[0], "Stop returns a copy")
		})
	}
}

// TestSystemWithoutSlot: families with no system turn handle a system
// message the way llama.cpp does (the reference outputs above show the
// merge for llama2, gemma and orion); this pins down the edge cases.
func TestSystemWithoutSlot(t *testing.T) {
	cases := []struct {
		name string
		msgs []Message
		want string
	}{
		{
			// gemma: trimmed system text joins the next user turn, after the
			// role line; system messages are concatenated as they are.
			name: "gemma",
			msgs: []Message{{Role: "system", Content: " A "}, {Role: "system", Content: "B"}, {Role: "user", Content: "hi"}},
			want: "<start_of_turn>user\nAB\n\nhi<end_of_turn>\n<start_of_turn>model\n",
		},
		{
			// gemma: a system message is never put into a model turn.
			name: "gemma",
			msgs: []Message{{Role: "user", Content: "a"}, {Role: "system", Content: "S"}, {Role: "assistant", Content: "b"}, {Role: "user", Content: "c"}},
			want: "<start_of_turn>user\na<end_of_turn>\n<start_of_turn>model\nb<end_of_turn>\n<start_of_turn>user\nS\n\nc<end_of_turn>\n<start_of_turn>model\n",
		},
		{
			// llama2 without <<SYS>>: bare system text and "\n" inside [INST].
			name: "llama2",
			msgs: []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}},
			want: "[INST] S\nhi [/INST]",
		},
		{
			// yandex: system messages are dropped.
			name: "yandex",
			msgs: []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}},
			want: yandexUser + " hi\n\n" + yandexAssistant + "[SEP]",
		},
	}
	for _, tc := range cases {
		tmpl, err := Named(tc.name)
		require.NoError(t, err)
		got, err := tmpl.Apply(tc.msgs, true)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// TestTrimIsASCII: llama.cpp trims with C's isspace, so a non-breaking space
// (U+00A0) survives where strings.TrimSpace would remove it.
func TestTrimIsASCII(t *testing.T) {
	assert.Equal(t, "a b", trim(" \t\n\v\f\ra b\r\n "))
	assert.Equal(t, "\u00a0x\u00a0", trim(" \u00a0x\u00a0 "))
	assert.Empty(t, trim(" \n "))
	assert.Empty(t, trim(""))
}
